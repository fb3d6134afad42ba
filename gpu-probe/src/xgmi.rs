//! The XGMI hive an AMD GPU is in, as amdgpu shows it in sysfs, and [`read_xgmi_hive_id`], the
//! one reader of that file. Every crate that needs a GPU's hive (the sync's partition read, a
//! warm reset's group: the kernel resets a hive together) reads it here.
//!
//! amdgpu gives every GPU of a hive an `xgmi_hive_info` directory (a real one under the first
//! member that joined, a link to it under the others) holding `xgmi_hive_id`: the hive's ID in
//! decimal and a newline, as `amdgpu_xgmi_show_attrs` prints it (`%llu\n`). A GPU in no hive has
//! no such directory.

use crate::pci::PciIdError;
use std::path::Path;

/// Where a PCI function's hive ID is, under its sysfs directory.
pub const XGMI_HIVE_ID: &str = "xgmi_hive_info/xgmi_hive_id";

/// What the kernel writes in `xgmi_hive_id`.
const HIVE_ID: &str = "an XGMI hive ID: decimal digits and a newline";

/// Parses `xgmi_hive_id`'s text: one line of decimal digits that fits in 64 bits, ending with
/// the newline the kernel writes. Anything else (no newline, a second line, spaces, a sign,
/// hexadecimal, a number past `u64::MAX`) is `None`: the kernel never writes it.
pub fn parse_xgmi_hive_id(text: &str) -> Option<u64> {
    let body = text.strip_suffix('\n')?;
    if body.is_empty() || !body.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    body.parse().ok()
}

/// Reads the hive of the PCI function at `dir` (a `bus/pci/devices/<address>` entry): `None`
/// when it has no `xgmi_hive_info/xgmi_hive_id` (a GPU in no hive, or no AMD GPU at all). A
/// file that cannot be read, or holds what the kernel never writes there, is an error naming
/// it, never "no hive".
pub fn read_xgmi_hive_id(dir: &Path) -> Result<Option<u64>, PciIdError> {
    let path = dir.join(XGMI_HIVE_ID);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => return Err(PciIdError::Read { path, source }),
    };
    match parse_xgmi_hive_id(&text) {
        Some(hive) => Ok(Some(hive)),
        None => Err(PciIdError::Malformed {
            path,
            content: text.trim().to_owned(),
            expected: HIVE_ID,
        }),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn the_hive_id_the_kernel_prints_reads_as_its_number() {
        assert_eq!(parse_xgmi_hive_id("0\n"), Some(0));
        assert_eq!(
            parse_xgmi_hive_id("12930883541387935051\n"),
            Some(12_930_883_541_387_935_051)
        );
        assert_eq!(
            parse_xgmi_hive_id(&format!("{}\n", u64::MAX)),
            Some(u64::MAX)
        );
    }

    #[test]
    fn text_the_kernel_never_writes_is_no_hive_id() {
        for text in [
            "",
            "\n",
            "42",
            "42\n\n",
            "4\n2\n",
            " 42\n",
            "42 \n",
            "+42\n",
            "-1\n",
            "0x2a\n",
            "18446744073709551616\n",
            "hive\n",
        ] {
            assert_eq!(parse_xgmi_hive_id(text), None, "{text:?}");
        }
    }

    #[test]
    fn every_number_reads_back_from_what_the_kernel_prints() {
        for hive in [0, 1, 7, 4242, u64::MAX / 3, u64::MAX] {
            assert_eq!(parse_xgmi_hive_id(&format!("{hive}\n")), Some(hive));
        }
    }

    #[test]
    fn a_gpu_without_the_file_is_in_no_hive() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(read_xgmi_hive_id(dir.path()).unwrap(), None);
    }

    #[test]
    fn a_gpu_with_the_file_is_in_its_hive_through_a_link_too() {
        let dir = tempfile::tempdir().unwrap();
        let first = dir.path().join("0000:05:00.0");
        let second = dir.path().join("0000:26:00.0");
        std::fs::create_dir_all(first.join("xgmi_hive_info")).unwrap();
        std::fs::create_dir_all(&second).unwrap();
        std::fs::write(first.join(XGMI_HIVE_ID), "4242\n").unwrap();
        // The kernel links the later members' xgmi_hive_info to the first member's.
        std::os::unix::fs::symlink(
            "../0000:05:00.0/xgmi_hive_info",
            second.join("xgmi_hive_info"),
        )
        .unwrap();
        assert_eq!(read_xgmi_hive_id(&first).unwrap(), Some(4242));
        assert_eq!(read_xgmi_hive_id(&second).unwrap(), Some(4242));
    }

    #[test]
    fn a_file_that_does_not_read_as_a_hive_id_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("xgmi_hive_info")).unwrap();
        std::fs::write(dir.path().join(XGMI_HIVE_ID), "hive 7\n").unwrap();
        let error = read_xgmi_hive_id(dir.path()).unwrap_err();
        assert!(
            matches!(&error, PciIdError::Malformed { path, content, .. }
                if path.ends_with(XGMI_HIVE_ID) && content == "hive 7"),
            "{error}"
        );
    }

    #[test]
    fn a_file_that_cannot_be_read_is_an_error_never_no_hive() {
        let dir = tempfile::tempdir().unwrap();
        // A directory where the file should be: read_to_string fails with EISDIR.
        std::fs::create_dir_all(dir.path().join(XGMI_HIVE_ID)).unwrap();
        let error = read_xgmi_hive_id(dir.path()).unwrap_err();
        assert!(matches!(&error, PciIdError::Read { .. }), "{error}");
    }
}
