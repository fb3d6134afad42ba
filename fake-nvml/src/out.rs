//! Writing answers through the caller's pointers, each checked before use.

use crate::state::{Answer, INVALID};
use nvml_wrapper_sys::bindings as nvml;
use std::ffi::c_char;

/// NVML's version stamp of a struct (`NVML_STRUCT_VERSION`): its size, and the version in the
/// top byte.
pub(crate) fn struct_version<T>(version: u32) -> u32 {
    u32::try_from(std::mem::size_of::<T>()).unwrap_or(0) | (version << 24)
}

/// The version stamp the caller put in the first member of the versioned struct at `info`; a
/// null pointer is `NVML_ERROR_INVALID_ARGUMENT`.
///
/// # Safety
///
/// `info` is null or valid for a read of a `u32` (every versioned struct starts with its stamp).
pub(crate) unsafe fn stamp_of<T>(info: *const T) -> Answer<u32> {
    if info.is_null() {
        return Err(INVALID);
    }
    // SAFETY: not null; every version of the struct starts with its stamp.
    Ok(unsafe { info.cast::<u32>().read() })
}

/// [`stamp_of`], where the one version NVML takes is `version` of `T`: another stamp is
/// `NVML_ERROR_ARGUMENT_VERSION_MISMATCH`.
///
/// # Safety
///
/// As [`stamp_of`]'s.
pub(crate) unsafe fn stamped<T>(info: *const T, version: u32) -> Answer<u32> {
    // SAFETY: passed on from this function's own contract.
    let stamp = unsafe { stamp_of(info) }?;
    if stamp != struct_version::<T>(version) {
        return Err(nvml::nvmlReturn_enum_NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
    }
    Ok(stamp)
}

/// `text` into a fixed C array, NUL-terminated (cut to fit).
pub(crate) fn c_array<const N: usize>(text: &str) -> [c_char; N] {
    let mut out = [0 as c_char; N];
    for (slot, byte) in out.iter_mut().zip(text.bytes().take(N.saturating_sub(1))) {
        *slot = byte as c_char;
    }
    out
}

/// Writes `value` to `out`; a null pointer is `NVML_ERROR_INVALID_ARGUMENT`.
///
/// # Safety
///
/// `out` is null or valid for a write of one `T`, as NVML's contract asks of its callers.
pub(crate) unsafe fn write<T>(out: *mut T, value: T) -> Answer<()> {
    if out.is_null() {
        return Err(INVALID);
    }
    // SAFETY: not null, and valid for one `T` by the caller's contract.
    unsafe { out.write(value) };
    Ok(())
}

/// Copies `text` and its NUL into the `length` chars at `buffer`; too small a buffer is
/// `NVML_ERROR_INSUFFICIENT_SIZE`.
///
/// # Safety
///
/// `buffer` is null or valid for `length` writes of `c_char`.
pub(crate) unsafe fn write_str(buffer: *mut c_char, length: u32, text: &str) -> Answer<()> {
    if buffer.is_null() {
        return Err(INVALID);
    }
    let bytes = text.as_bytes();
    let room = usize::try_from(length).map_err(|_| INVALID)?;
    if bytes.len() + 1 > room {
        return Err(nvml::nvmlReturn_enum_NVML_ERROR_INSUFFICIENT_SIZE);
    }
    for (at, byte) in bytes.iter().chain(&[0]).enumerate() {
        // SAFETY: `at` < bytes.len() + 1 <= length, and `buffer` holds `length` chars.
        unsafe { buffer.add(at).write(*byte as c_char) };
    }
    Ok(())
}

/// Writes the handles into the caller's array of `*count` entries and sets `*count`; an array
/// too small is `NVML_ERROR_INSUFFICIENT_SIZE` with `*count` set to what is needed.
///
/// # Safety
///
/// `count` is null or valid for a read and a write of a `u32`; `array` is null or valid for
/// `*count` writes of `T`.
pub(crate) unsafe fn write_list<T: Copy>(
    array: *mut T,
    count: *mut u32,
    items: &[T],
) -> Answer<()> {
    if count.is_null() {
        return Err(INVALID);
    }
    // SAFETY: not null; valid by the caller's contract.
    let room = unsafe { count.read() };
    let needed = u32::try_from(items.len()).map_err(|_| INVALID)?;
    // SAFETY: as above.
    unsafe { count.write(needed) };
    if items.is_empty() {
        return Ok(());
    }
    if array.is_null() || room < needed {
        return Err(nvml::nvmlReturn_enum_NVML_ERROR_INSUFFICIENT_SIZE);
    }
    for (at, item) in items.iter().enumerate() {
        // SAFETY: at < needed <= room, the array's length by the caller's contract.
        unsafe { array.add(at).write(*item) };
    }
    Ok(())
}

/// Writes the handles into the caller's array and sets `*count`, where NVML's contract has the
/// caller size the array by the profile's instance count and `*count` is an answer only.
///
/// # Safety
///
/// `count` is null or valid for a write of a `u32`; `array` is null or valid for
/// `items.len()` writes of `T` (at most the profile's instance count).
pub(crate) unsafe fn write_found<T: Copy>(
    array: *mut T,
    count: *mut u32,
    items: &[T],
) -> Answer<()> {
    if count.is_null() || (array.is_null() && !items.is_empty()) {
        return Err(INVALID);
    }
    for (at, item) in items.iter().enumerate() {
        // SAFETY: the caller's array holds at least the profile's instance count, and a
        // scenario never lists more instances of a profile than that.
        unsafe { array.add(at).write(*item) };
    }
    let found = u32::try_from(items.len()).map_err(|_| INVALID)?;
    // SAFETY: not null; valid by the caller's contract.
    unsafe { count.write(found) };
    Ok(())
}
