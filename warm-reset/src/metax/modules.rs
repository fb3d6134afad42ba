//! The `metax` kernel module's use count, as `/proc/modules` shows it.

/// The `metax` kernel module, as `/proc/modules` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum DriverUse {
    /// No `metax` line: the driver is not loaded.
    NotLoaded,
    /// Loaded with this use count.
    Loaded(u32),
    /// The line does not read (counted as in use: never reset when unsure).
    Unreadable(String),
}

/// Reads the `metax` line of a `/proc/modules` text (`name size use_count deps state address`).
pub fn metax_use(modules: &str) -> DriverUse {
    for line in modules.lines() {
        let mut fields = line.split_whitespace();
        if fields.next() != Some("metax") {
            continue;
        }
        return match fields.nth(1).map(str::parse::<u32>) {
            Some(Ok(count)) => DriverUse::Loaded(count),
            Some(Err(_)) | None => DriverUse::Unreadable(line.to_owned()),
        };
    }
    DriverUse::NotLoaded
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_metax_use_count_is_the_third_field() {
        let modules = "nvme 61440 3 - Live 0x0\nmetax 4194304 0 - Live 0xffffffffc0a00000\n";
        assert_eq!(metax_use(modules), DriverUse::Loaded(0));
        assert_eq!(
            metax_use("metax 4194304 2 mxgvm, Live 0x0\n"),
            DriverUse::Loaded(2)
        );
    }

    #[test]
    fn no_metax_line_is_not_loaded() {
        assert_eq!(
            metax_use("metax_other 1 0 - Live 0x0\nnvme 1 0 - Live 0x0\n"),
            DriverUse::NotLoaded
        );
    }

    #[test]
    fn a_metax_line_that_does_not_read_is_unreadable() {
        assert!(matches!(
            metax_use("metax 4194304 many - Live\n"),
            DriverUse::Unreadable(_)
        ));
    }
}
