//! How a run of the helper maps to a reason when there is no usable reply.

use crate::run::{RunResult, StartError, Termination};
use gpu_partition_types::{EXIT_BUSY, UnreadableReason};

/// `None` when the run's stdout is to be decoded; otherwise why there is no usable reply, as
/// `docs/helper-protocol.md` says ("Why a read has no answer").
pub fn reason_of(result: &RunResult) -> Option<UnreadableReason> {
    let by_exit = |termination: &Termination| match termination {
        Termination::Exited(0) => None,
        Termination::Exited(code) if *code == i32::from(EXIT_BUSY) => Some(UnreadableReason::Busy),
        Termination::Exited(_) | Termination::Signaled(_) | Termination::Unknown => {
            Some(UnreadableReason::Crash)
        }
    };
    match result {
        RunResult::Exited(code) => by_exit(&Termination::Exited(*code)),
        RunResult::Signaled(signal) => by_exit(&Termination::Signaled(*signal)),
        RunResult::EndUnknown => by_exit(&Termination::Unknown),
        // An answer written before a grandchild kept the pipes open is still an answer.
        RunResult::LeakedPipes(termination) => by_exit(termination),
        RunResult::TimedOut => Some(UnreadableReason::Timeout),
        RunResult::Cancelled => Some(UnreadableReason::Cancelled),
        RunResult::OutputTooLarge(_) => Some(UnreadableReason::Undecodable),
        RunResult::CouldNotStart(StartError::Absent { .. }) => Some(UnreadableReason::HelperAbsent),
        RunResult::CouldNotStart(
            StartError::Untrusted { .. } | StartError::RelativePath { .. },
        ) => Some(UnreadableReason::HelperUnsafe),
        RunResult::CouldNotStart(
            StartError::NotExecutable { .. } | StartError::SpawnFailed { .. },
        ) => Some(UnreadableReason::HelperNotExecutable),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::Stream;

    #[test]
    fn every_run_result_maps_to_the_protocols_reason() {
        let absent = StartError::Absent {
            program: "/h".into(),
        };
        let not_exec = StartError::NotExecutable {
            program: "/h".into(),
            why: "mode".into(),
        };
        let spawn = StartError::SpawnFailed {
            program: "/h".into(),
            why: "ENOEXEC".into(),
        };
        let table = [
            (RunResult::Exited(0), None),
            (RunResult::Exited(75), Some(UnreadableReason::Busy)),
            (RunResult::Exited(1), Some(UnreadableReason::Crash)),
            (RunResult::Signaled(11), Some(UnreadableReason::Crash)),
            (RunResult::EndUnknown, Some(UnreadableReason::Crash)),
            (RunResult::TimedOut, Some(UnreadableReason::Timeout)),
            (
                RunResult::OutputTooLarge(Stream::Stdout),
                Some(UnreadableReason::Undecodable),
            ),
            (RunResult::LeakedPipes(Termination::Exited(0)), None),
            (
                RunResult::LeakedPipes(Termination::Exited(75)),
                Some(UnreadableReason::Busy),
            ),
            (
                RunResult::LeakedPipes(Termination::Signaled(9)),
                Some(UnreadableReason::Crash),
            ),
            (
                RunResult::LeakedPipes(Termination::Unknown),
                Some(UnreadableReason::Crash),
            ),
            (
                RunResult::CouldNotStart(absent),
                Some(UnreadableReason::HelperAbsent),
            ),
            (
                RunResult::CouldNotStart(not_exec),
                Some(UnreadableReason::HelperNotExecutable),
            ),
            (
                RunResult::CouldNotStart(spawn),
                Some(UnreadableReason::HelperNotExecutable),
            ),
            (
                RunResult::CouldNotStart(StartError::RelativePath {
                    program: "bin/h".into(),
                }),
                Some(UnreadableReason::HelperUnsafe),
            ),
        ];
        for (result, reason) in table {
            assert_eq!(reason_of(&result), reason, "{result}");
        }
    }
}
