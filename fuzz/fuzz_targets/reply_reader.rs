//! Any bytes into the reply and version readers: never a panic; an accepted reply writes JSON
//! that reads back to the same outcome, in one page and in pages, and writing is a fixpoint.
#![no_main]

use gpu_partition_types::{Reply, VersionReply};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = VersionReply::from_json(data);
    if let Ok(reply) = Reply::from_json(data, None) {
        let _ = reply.outcome();
        let _ = reply.unknown();
        let written = reply.to_json();
        let again = Reply::from_json(written.as_bytes(), None);
        let again = again.unwrap_or_else(|refusal| panic!("a written reply was refused: {refusal}"));
        // Lost members are not written: what was read is kept, and writing again changes
        // nothing.
        assert_eq!(again.outcome().partition_mode(), reply.outcome().partition_mode());
        assert_eq!(again.to_json(), written);
        let paged = Reply::from_json(reply.to_pages(2).join("\n").as_bytes(), None);
        assert_eq!(paged.map(|r| r.to_json()), Ok(written));
    }
});
