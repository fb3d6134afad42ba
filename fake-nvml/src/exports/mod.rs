//! The NVML functions, with NVML's C ABI. Each answers from the scenario read by
//! [`system::nvmlInit_v2`] and fails as the scenario's `fail` says for its device.
//!
//! They are `unsafe extern "C"`: a caller must pass pointers valid as NVML's documentation
//! asks (null is answered with `NVML_ERROR_INVALID_ARGUMENT`, never dereferenced).
//!
//! The modules are private: each function is `#[unsafe(no_mangle)]`, so the cdylib exports
//! it by its C name (`nm -D` lists it; `tests/c_abi.rs` checks), and none is Rust API.
#![allow(non_snake_case)]

/// NVML functions that read the scenario and answer, each declared as `fn name(args) |s| body`
/// under its docs (its `# Safety` with them), with `logs("...", args)` after the arguments when
/// the call log names more than the function. Each becomes the exported
/// `#[unsafe(no_mangle)] pub unsafe extern "C" fn name(args) -> nvmlReturn_t` that logs the call
/// (`name`, then what `logs` formats), runs `body` on the scenario (`with`, as `s`) and returns
/// its code (`code`); in `body`, `CALL` is the function's name, as the scenario's `fail` names
/// it. A function that checks its arguments before the scenario is read, or that changes the
/// state, is written out by hand.
macro_rules! answered {
    ($(
        $(#[$meta:meta])*
        fn $name:ident($($arg:ident: $ty:ty),* $(,)?)
            $(logs($format:literal $(, $logged:expr)* $(,)?))?
            |$s:ident| $body:block
    )*) => {$(
        $(#[$meta])*
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name($($arg: $ty),*) -> nvml::nvmlReturn_t {
            /// The function's name, as the call log and the scenario's `fail` name it.
            #[allow(dead_code)]
            const CALL: &str = stringify!($name);
            crate::state::log(format_args!(
                concat!(stringify!($name) $(, " ", $format)?) $($(, $logged)*)?
            ));
            crate::state::code(crate::state::with(|$s| $body))
        }
    )*};
}

pub mod device;
pub mod instance;
pub mod lookup;
pub mod mig;
pub mod system;
pub mod unmodelled;
pub mod vgpu;
