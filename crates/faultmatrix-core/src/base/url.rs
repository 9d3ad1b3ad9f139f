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
    /// A URL holding credentials (`http://user:pass@host`) is refused, and
    /// no message shows them.
    pub fn parse(url: &str) -> Result<Self, String> {
        let shown = crate::base::redact::url_credentials(url);
        let url = shown.as_ref();
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
        if auth.contains('@') {
            return Err(format!(
                "`{url}` holds credentials: give the key in `FAULTMATRIX_UPSTREAM_<ROUTE>_KEY` or `key_env` instead (see docs/tapes.md); a URL is printed in messages, a key never is"
            ));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_with_credentials_is_refused_without_showing_them() {
        let e = BaseUrl::parse("http://user:hunter2@127.0.0.1:9/v1").unwrap_err();
        assert!(
            e.starts_with("`http://***@127.0.0.1:9/v1` holds credentials"),
            "{e}"
        );
        let e = BaseUrl::parse("https://user:hunter2@example.test").unwrap_err();
        assert!(!e.contains("hunter2"), "{e}");
        assert_eq!(BaseUrl::parse("http://h:1/p/").unwrap().prefix, "/p");
    }
}
