//! The library NVML is loaded from, and its answers as the reply needs them: the safe
//! wrapper's errors and the raw return codes of the calls it does not make.

use crate::api::{Nvml as Answer, NvmlFailure};
use nvml_wrapper::error::{NvmlError, nvml_try};
use nvml_wrapper_sys::bindings::{self as sys, nvmlReturn_t};

/// The library NVML is loaded from.
pub const LIBRARY: &str = "libnvidia-ml.so.1";

/// Maps NVML's errors to what the reply needs.
pub fn failure(error: NvmlError) -> NvmlFailure {
    match error {
        NvmlError::InUse => {
            NvmlFailure::InUse("NVML reports the card in use by another client".to_owned())
        }
        NvmlError::NotSupported => NvmlFailure::NotSupported,
        NvmlError::InvalidArg => NvmlFailure::InvalidArgument,
        NvmlError::FailedToLoadSymbol(why) => NvmlFailure::FunctionMissing(why),
        NvmlError::FunctionNotFound => {
            NvmlFailure::FunctionMissing("NVML_ERROR_FUNCTION_NOT_FOUND".to_owned())
        }
        NvmlError::NoPermission => NvmlFailure::NoPermission("NVML: no permission".to_owned()),
        NvmlError::NotFound => NvmlFailure::NotFound("NVML: no such card".to_owned()),
        NvmlError::LibloadingError(error) => {
            NvmlFailure::LibraryMissing(format!("cannot load {LIBRARY}: {error}"))
        }
        NvmlError::LibraryNotFound => NvmlFailure::LibraryMissing(format!("{LIBRARY} not found")),
        other => NvmlFailure::Driver(format!("NVML: {other}")),
    }
}

/// Maps a raw NVML return code, for the calls the safe wrapper does not make (its error type
/// has no variant for `NVML_ERROR_INSUFFICIENT_RESOURCES`).
pub fn check(code: nvmlReturn_t) -> Answer<()> {
    let named = |what: &str| format!("NVML: {what} ({code})");
    match code {
        sys::nvmlReturn_enum_NVML_SUCCESS => Ok(()),
        sys::nvmlReturn_enum_NVML_ERROR_IN_USE => Err(NvmlFailure::InUse(named("in use"))),
        sys::nvmlReturn_enum_NVML_ERROR_INSUFFICIENT_RESOURCES => Err(
            NvmlFailure::InsufficientResources(named("insufficient resources")),
        ),
        sys::nvmlReturn_enum_NVML_ERROR_RESET_REQUIRED => {
            Err(NvmlFailure::ResetRequired(named("reset required")))
        }
        sys::nvmlReturn_enum_NVML_ERROR_NOT_SUPPORTED => Err(NvmlFailure::NotSupported),
        sys::nvmlReturn_enum_NVML_ERROR_INVALID_ARGUMENT => Err(NvmlFailure::InvalidArgument),
        sys::nvmlReturn_enum_NVML_ERROR_NO_PERMISSION => {
            Err(NvmlFailure::NoPermission(named("no permission")))
        }
        sys::nvmlReturn_enum_NVML_ERROR_NOT_FOUND => Err(NvmlFailure::NotFound(named("not found"))),
        sys::nvmlReturn_enum_NVML_ERROR_FUNCTION_NOT_FOUND => Err(NvmlFailure::FunctionMissing(
            "NVML_ERROR_FUNCTION_NOT_FOUND".to_owned(),
        )),
        other => Err(match nvml_try(other) {
            Err(error) => failure(error),
            Ok(()) => NvmlFailure::Driver(format!("NVML: return code {other}")),
        }),
    }
}
