//! Base URLs of upstreams (`http://host:port/prefix`).

/// A parsed `http://host:port/prefix` base URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BaseUrl {
    /// `host:port`.
    pub authority: String,
    /// The host alone (for the `Host` header).
    pub host: String,
    /// Path prefix without a trailing `/` (may be empty).
    pub prefix: String,
}

impl BaseUrl {
    /// Parses a base URL. Only `http://` is supported.
    pub fn parse(url: &str) -> Result<Self, String> {
        let rest = url.strip_prefix("http://").ok_or_else(|| {
            if url.starts_with("https://") {
                format!("`{url}`: https is not supported by the recorder; record through a local http:// forwarder (see docs/tapes.md)")
            } else {
                format!("`{url}` is not an http:// URL")
            }
        })?;
        let (auth, prefix) = match rest.find('/') {
            Some(i) => (&rest[..i], rest[i..].trim_end_matches('/')),
            None => (rest, ""),
        };
        if auth.is_empty() {
            return Err(format!("`{url}` has no host"));
        }
        let authority = if auth.contains(':') {
            auth.to_string()
        } else {
            format!("{auth}:80")
        };
        Ok(Self {
            host: auth.to_string(),
            authority,
            prefix: prefix.to_string(),
        })
    }
}
