//! An AMD Instinct GPU's partitions read from sysfs as amdgpu writes them (the samples and their
//! sources: `tests/samples/amd/README.md`), failing closed on what the kernel does not write.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use gpu_host_probe::amdgpu::{
    AmdError, AmdPartitions, parse_available_compute, parse_current_compute, read_partitions,
};
use gpu_host_probe::amdgpu::{ComputePartition as C, MemoryPartition as M};
use host_sync::fake_sysfs::FakeSysfs;
use proptest::prelude::*;
use std::path::Path;

const GPU: &str = "0000:05:00.0";

/// A sysfs with an AMD accelerator at `GPU` whose files are the sample's `name: text` lines.
fn laid_out(sample: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let sysfs = FakeSysfs::new(dir.path()).unwrap();
    sysfs
        .function(GPU, "0x1002", "0x74a1", "0x120000", Some("amdgpu"))
        .unwrap();
    let device = sysfs.device_dir(GPU);
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/samples/amd")
        .join(sample);
    for line in std::fs::read_to_string(path).unwrap().lines() {
        let (name, text) = line.split_once(": ").unwrap();
        let file = device.join(name);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, format!("{text}\n")).unwrap();
    }
    dir
}

fn read(dir: &tempfile::TempDir) -> Result<Option<AmdPartitions>, AmdError> {
    read_partitions(dir.path(), GPU.parse().unwrap())
}

#[test]
fn an_mi300x_in_spx_and_nps1_reads_with_what_it_offers_and_its_hive() {
    let dir = laid_out("mi300x-spx-nps1.txt");
    let read = read(&dir).unwrap().unwrap();
    assert_eq!(read.compute, C::Spx);
    assert_eq!(read.available_compute, [C::Spx, C::Dpx, C::Qpx, C::Cpx]);
    assert_eq!(read.memory, Some(M::Nps1));
    assert_eq!(read.available_memory, [M::Nps1, M::Nps4]);
    assert_eq!(read.hive, Some(12_386_496_430_428_395_541));
}

#[test]
fn an_mi300x_in_cpx_and_nps4_offers_only_the_compute_modes_nps4_allows() {
    let dir = laid_out("mi300x-cpx-nps4.txt");
    let read = read(&dir).unwrap().unwrap();
    assert_eq!((read.compute, read.memory), (C::Cpx, Some(M::Nps4)));
    assert_eq!(read.available_compute, [C::Qpx, C::Cpx]);
}

#[test]
fn an_mi300a_has_one_memory_mode_and_no_list_of_them() {
    let dir = laid_out("mi300a-tpx.txt");
    let read = read(&dir).unwrap().unwrap();
    assert_eq!(read.available_compute, [C::Spx, C::Tpx, C::Cpx]);
    assert_eq!(read.memory, Some(M::Nps1));
    assert!(read.available_memory.is_empty());
    assert_eq!(read.hive, None);
}

#[test]
fn a_gpu_without_the_partition_files_has_no_partitions() {
    let dir = tempfile::tempdir().unwrap();
    FakeSysfs::new(dir.path())
        .unwrap()
        .function(GPU, "0x1002", "0x740f", "0x038000", Some("amdgpu"))
        .unwrap();
    assert!(read(&dir).unwrap().is_none());
}

#[test]
fn the_fake_sysfs_writes_what_the_reader_reads() {
    let dir = tempfile::tempdir().unwrap();
    FakeSysfs::new(dir.path())
        .unwrap()
        .amd_instinct(
            GPU,
            "0x74a1",
            (C::Cpx, &[C::Qpx, C::Cpx]),
            Some((M::Nps4, &[M::Nps1, M::Nps4])),
            Some(7),
        )
        .unwrap();
    let read = read(&dir).unwrap().unwrap();
    assert_eq!(
        (read.compute, read.memory, read.hive),
        (C::Cpx, Some(M::Nps4), Some(7))
    );
}

fn compute(text: &str) -> Result<C, String> {
    parse_current_compute(Path::new("/sys/x/current_compute_partition"), text)
        .map_err(|error| error.to_string())
}

#[test]
fn unknown_is_the_kernel_saying_no_mode_is_set_and_is_an_error_naming_the_file() {
    assert_eq!(
        compute("UNKNOWN\n"),
        Err(
            "/sys/x/current_compute_partition: the kernel says UNKNOWN: the driver has set no \
             compute partition"
                .to_owned()
        )
    );
}

#[test]
fn what_the_kernel_does_not_write_is_refused_naming_the_file_and_the_text() {
    for text in ["XPX\n", "spx\n", "SPX", "SPX\n\n", " SPX\n", ""] {
        let error = compute(text).unwrap_err();
        assert!(
            error.starts_with("/sys/x/current_compute_partition: ")
                && error.contains(&format!("{text:?}")),
            "{error}"
        );
    }
}

#[test]
fn a_list_out_of_the_kernels_order_or_spelt_otherwise_is_refused() {
    let path = Path::new("/sys/x/available_compute_partition");
    assert_eq!(
        parse_available_compute(path, "Not supported\n").unwrap(),
        []
    );
    for text in [
        "CPX, SPX\n",
        "SPX,CPX\n",
        "SPX, SPX\n",
        "SPX, \n",
        "SPX, XPX\n",
    ] {
        assert!(
            matches!(
                parse_available_compute(path, text),
                Err(AmdError::Unexpected { .. })
            ),
            "{text:?}"
        );
    }
}

proptest! {
    /// Whatever a file holds, the reader answers a mode or an error naming the file.
    #[test]
    fn any_text_in_a_partition_file_reads_or_is_refused_naming_it(text in "\\PC{0,24}") {
        let path = Path::new("/sys/x/current_compute_partition");
        if let Err(error) = parse_current_compute(path, &text) {
            prop_assert!(error.to_string().starts_with("/sys/x/current_compute_partition: "));
        }
        let path = Path::new("/sys/x/available_compute_partition");
        if let Ok(modes) = parse_available_compute(path, &text) {
            prop_assert!(modes.windows(2).all(|pair| pair[0] < pair[1]));
        }
    }
}
