//! What a scenario writes as text and NVML takes as numbers: a PCI bus ID (either form NVML
//! accepts) and an `NVML_ERROR_*` name.

use nvml_wrapper_sys::bindings as nvml;

/// A bus ID as numbers (domain, bus, device, function), from either form NVML accepts, in any
/// case.
pub(crate) fn parse_bus_id(text: &str) -> Option<(u32, u8, u8, u8)> {
    let hex = |part: &str, most: usize| {
        (!part.is_empty() && part.len() <= most && part.bytes().all(|b| b.is_ascii_hexdigit()))
            .then(|| u32::from_str_radix(part, 16).ok())
            .flatten()
    };
    let (domain, rest) = text.trim().split_once(':')?;
    let (bus, rest) = rest.split_once(':')?;
    let (device, function) = rest.split_once('.')?;
    Some((
        hex(domain, 8)?,
        u8::try_from(hex(bus, 2)?).ok()?,
        u8::try_from(hex(device, 2)?).ok()?,
        u8::try_from(hex(function, 1)?).ok()?,
    ))
}

/// The code of an `NVML_ERROR_*` name without its prefix (`NO_PERMISSION`).
pub(crate) fn error_code(name: &str) -> Option<nvml::nvmlReturn_t> {
    ERRORS
        .iter()
        .find(|(known, _)| *known == name)
        .map(|(_, code)| *code)
}

/// Every `NVML_ERROR_*` name with its code.
const ERRORS: [(&str, nvml::nvmlReturn_t); 31] = [
    (
        "UNINITIALIZED",
        nvml::nvmlReturn_enum_NVML_ERROR_UNINITIALIZED,
    ),
    (
        "INVALID_ARGUMENT",
        nvml::nvmlReturn_enum_NVML_ERROR_INVALID_ARGUMENT,
    ),
    (
        "NOT_SUPPORTED",
        nvml::nvmlReturn_enum_NVML_ERROR_NOT_SUPPORTED,
    ),
    (
        "NO_PERMISSION",
        nvml::nvmlReturn_enum_NVML_ERROR_NO_PERMISSION,
    ),
    (
        "ALREADY_INITIALIZED",
        nvml::nvmlReturn_enum_NVML_ERROR_ALREADY_INITIALIZED,
    ),
    ("NOT_FOUND", nvml::nvmlReturn_enum_NVML_ERROR_NOT_FOUND),
    (
        "INSUFFICIENT_SIZE",
        nvml::nvmlReturn_enum_NVML_ERROR_INSUFFICIENT_SIZE,
    ),
    (
        "INSUFFICIENT_POWER",
        nvml::nvmlReturn_enum_NVML_ERROR_INSUFFICIENT_POWER,
    ),
    (
        "DRIVER_NOT_LOADED",
        nvml::nvmlReturn_enum_NVML_ERROR_DRIVER_NOT_LOADED,
    ),
    ("TIMEOUT", nvml::nvmlReturn_enum_NVML_ERROR_TIMEOUT),
    ("IRQ_ISSUE", nvml::nvmlReturn_enum_NVML_ERROR_IRQ_ISSUE),
    (
        "LIBRARY_NOT_FOUND",
        nvml::nvmlReturn_enum_NVML_ERROR_LIBRARY_NOT_FOUND,
    ),
    (
        "FUNCTION_NOT_FOUND",
        nvml::nvmlReturn_enum_NVML_ERROR_FUNCTION_NOT_FOUND,
    ),
    (
        "CORRUPTED_INFOROM",
        nvml::nvmlReturn_enum_NVML_ERROR_CORRUPTED_INFOROM,
    ),
    ("GPU_IS_LOST", nvml::nvmlReturn_enum_NVML_ERROR_GPU_IS_LOST),
    (
        "RESET_REQUIRED",
        nvml::nvmlReturn_enum_NVML_ERROR_RESET_REQUIRED,
    ),
    (
        "OPERATING_SYSTEM",
        nvml::nvmlReturn_enum_NVML_ERROR_OPERATING_SYSTEM,
    ),
    (
        "LIB_RM_VERSION_MISMATCH",
        nvml::nvmlReturn_enum_NVML_ERROR_LIB_RM_VERSION_MISMATCH,
    ),
    ("IN_USE", nvml::nvmlReturn_enum_NVML_ERROR_IN_USE),
    ("MEMORY", nvml::nvmlReturn_enum_NVML_ERROR_MEMORY),
    ("NO_DATA", nvml::nvmlReturn_enum_NVML_ERROR_NO_DATA),
    (
        "VGPU_ECC_NOT_SUPPORTED",
        nvml::nvmlReturn_enum_NVML_ERROR_VGPU_ECC_NOT_SUPPORTED,
    ),
    (
        "INSUFFICIENT_RESOURCES",
        nvml::nvmlReturn_enum_NVML_ERROR_INSUFFICIENT_RESOURCES,
    ),
    (
        "FREQ_NOT_SUPPORTED",
        nvml::nvmlReturn_enum_NVML_ERROR_FREQ_NOT_SUPPORTED,
    ),
    (
        "ARGUMENT_VERSION_MISMATCH",
        nvml::nvmlReturn_enum_NVML_ERROR_ARGUMENT_VERSION_MISMATCH,
    ),
    ("DEPRECATED", nvml::nvmlReturn_enum_NVML_ERROR_DEPRECATED),
    ("NOT_READY", nvml::nvmlReturn_enum_NVML_ERROR_NOT_READY),
    (
        "GPU_NOT_FOUND",
        nvml::nvmlReturn_enum_NVML_ERROR_GPU_NOT_FOUND,
    ),
    (
        "INVALID_STATE",
        nvml::nvmlReturn_enum_NVML_ERROR_INVALID_STATE,
    ),
    (
        "RESET_TYPE_NOT_SUPPORTED",
        nvml::nvmlReturn_enum_NVML_ERROR_RESET_TYPE_NOT_SUPPORTED,
    ),
    ("UNKNOWN", nvml::nvmlReturn_enum_NVML_ERROR_UNKNOWN),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_forms_of_a_bus_id_read_as_the_same_address() {
        assert_eq!(parse_bus_id("00000000:3B:00.0"), Some((0, 0x3b, 0, 0)));
        assert_eq!(
            parse_bus_id("0000:3b:00.0"),
            parse_bus_id("00000000:3B:00.0")
        );
        assert_eq!(parse_bus_id("3b:00.0"), None);
    }
}
