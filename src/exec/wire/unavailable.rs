//! Whether rows over the wire can run in this build: its own file, so
//! the `off` module can name the reason without importing its parent.

/// Why rows over the wire cannot run in this build (`None`: they can).
pub const UNAVAILABLE: Option<&str> = if cfg!(feature = "wire") {
    None
} else {
    Some(
        "this row runs over the wire (a command system or `--over-http`), and faultmatrix was \
         built without its `wire` feature; enable it: `faultmatrix = { ..., features = [\"wire\"] }`",
    )
};
