//! [`setters!`](crate::setters): the builder methods that set one field each, declared once.

/// Declares builder methods that each set the field of their name and give the value back
/// (`pub fn poll(mut self, poll: Duration) -> Self`): the shape the workspace's configurations
/// are built in, written once, so that a builder lists only its fields, their types and their
/// docs. It is used inside an `impl` block; a setter that does more than set its field (clamps
/// it, wraps it in `Some`) is written by hand beside it.
///
/// ```
/// #[derive(Debug, Default)]
/// struct Config {
///     retries: u32,
///     quiet: bool,
/// }
///
/// impl Config {
///     gpu_host_probe::setters! {
///         /// The same with `retries`.
///         pub retries: u32,
///         /// The same, quiet or not.
///         pub quiet: bool,
///     }
/// }
///
/// let config = Config::default().retries(3).quiet(true);
/// assert_eq!((config.retries, config.quiet), (3, true));
/// ```
#[macro_export]
macro_rules! setters {
    ($($(#[$attr:meta])* $vis:vis $name:ident: $ty:ty),* $(,)?) => {
        $(
            $(#[$attr])*
            $vis fn $name(mut self, $name: $ty) -> Self {
                self.$name = $name;
                self
            }
        )*
    };
}
