//! The config file read and written: defaults, comments, bad values named by file and line,
//! every setting read back from its shown value, the sample file, hooks and switches.

#![allow(clippy::unwrap_used)]
use super::*;

fn parse(text: &str) -> Result<Config, Failure> {
    Config::parse(text, Path::new("test.conf"))
}

#[test]
fn an_empty_file_gives_the_defaults() {
    assert_eq!(parse("").unwrap(), Config::default());
}

#[test]
fn comments_and_blank_lines_are_skipped_and_spaces_around_equals_are_free() {
    let config =
        parse("# a comment\n\n  helper-deadline=2.5  \ngpu-partitioning =enabled\n").unwrap();
    assert_eq!(config.helper.deadline, Duration::from_millis(2500));
    assert!(config.pool.is_enabled());
}

#[test]
fn an_unknown_key_is_ignored() {
    assert_eq!(parse("colour = blue\n").unwrap(), Config::default());
}

#[test]
fn a_bad_value_names_the_file_and_line() {
    let error = parse("\nhelper-deadline = soon\n").unwrap_err();
    assert!(error.to_string().starts_with("test.conf:2: "), "{error}");
}

#[test]
fn a_relative_helper_path_is_refused() {
    assert!(parse("gpu-partition-helper = bin/helper").is_err());
}

#[test]
fn a_line_without_equals_is_refused() {
    assert!(parse("gpu-partitioning enabled").is_err());
}

#[test]
fn the_pool_switch_takes_only_enabled_or_disabled() {
    assert!(parse("gpu-partitioning = on").is_err());
}

#[test]
fn each_setting_read_from_its_shown_value_gives_the_same_value() {
    // Every default but the programs looked for (and the manual link step) is a value
    // the file could hold.
    let config = Config::default();
    for setting in SETTINGS {
        let shown = setting.value(&config);
        if shown.starts_with('(') {
            continue;
        }
        let mut again = Config::default();
        (setting.read)(&mut again, &shown).unwrap();
        assert_eq!(setting.value(&again), shown, "{}", setting.key);
    }
}

#[test]
fn the_sample_file_shows_every_setting_with_its_default_and_nothing_else() {
    let sample = include_str!("../../../mxctl.conf");
    let mut shown: Vec<&str> = sample
        .lines()
        .filter_map(|line| line.strip_prefix("# ")?.split_once(" ="))
        .map(|(key, _)| key)
        .filter(|key| !key.contains(' '))
        .collect();
    shown.dedup();
    let keys: Vec<&str> = SETTINGS.iter().map(|s| s.key).collect();
    assert_eq!(shown, keys);
    // Uncommented, each line with a value reads; the defaults stay the defaults, but for
    // the examples of commands (the hooks) and the helper's path.
    let uncommented: String = sample
        .lines()
        .filter_map(|line| line.strip_prefix("# "))
        .filter(|line| {
            line.split_once(" = ").is_some_and(|(key, value)| {
                SETTINGS.iter().any(|s| s.key == key) && !value.is_empty()
            })
        })
        .map(|line| format!("{line}\n"))
        .collect();
    let read = parse(&uncommented).unwrap();
    assert_eq!(read.sync_interval, Config::default().sync_interval);
    assert_eq!(read.unnamed, Config::default().unnamed);
}

#[test]
fn keys_are_unique() {
    let mut keys: Vec<&str> = SETTINGS.iter().map(|s| s.key).collect();
    keys.sort_unstable();
    keys.dedup();
    assert_eq!(keys.len(), SETTINGS.len());
}

#[test]
fn a_relative_hook_path_is_refused_naming_the_key_and_line() {
    let error = parse("\nhook-pre-apply-mode = hooks/drain.sh now\n").unwrap_err();
    let message = error.to_string();
    assert!(
        message.starts_with("test.conf:2: `hook-pre-apply-mode` is no command to run")
            && message.contains("hooks/drain.sh is a relative path"),
        "{message}"
    );
}

#[test]
fn a_hook_given_twice_runs_both_commands_in_order() {
    let config =
        parse("hook-apply-exit = /bin/true one\nhook-apply-exit = /bin/true two\n").unwrap();
    let lines: Vec<String> = config
        .hooks
        .at(HookPoint::ApplyExit)
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(lines, ["/bin/true one", "/bin/true two"]);
}

#[test]
fn restore_at_boot_reads_as_a_switch() {
    assert!(!parse("restore-at-boot = disabled").unwrap().restore_at_boot);
    assert!(parse("restore-at-boot = off").is_err());
}
