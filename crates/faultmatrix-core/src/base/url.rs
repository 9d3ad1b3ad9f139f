//! Base URLs of upstreams (`http://host:port/prefix`, `https://…`).

/// A checked `http://` or `https://` base URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BaseUrl {
    /// The URL without a trailing `/`: a call's path is appended to it.
    pub url: String,
}

impl BaseUrl {
    /// Parses a base URL: `http://` or `https://`, a host, an optional
    /// numeric port and an optional path prefix. A URL holding credentials
    /// (`http://user:pass@host`) is refused, and no message shows them.
    pub fn parse(url: &str) -> Result<Self, String> {
        let shown = crate::base::redact::url_credentials(url);
        let url = shown.as_ref();
        let rest = url
            .strip_prefix("http://")
            .or_else(|| url.strip_prefix("https://"))
            .ok_or_else(|| format!("`{url}` is not an http:// or https:// URL"))?;
        let auth = rest.split('/').next().unwrap_or("");
        if auth.contains('@') {
            return Err(format!(
                "`{url}` holds credentials: give the key in `FAULTMATRIX_UPSTREAM_<ROUTE>_KEY` or `key_env` instead (see docs/tapes.md); a URL is printed in messages, a key never is"
            ));
        }
        // `[::1]:8080`: the port follows the bracket.
        let (host, port) = match auth.find(']') {
            Some(end) if auth.starts_with('[') => {
                (&auth[..=end], auth[end + 1..].strip_prefix(':'))
            }
            _ => match auth.rsplit_once(':') {
                Some((h, p)) => (h, Some(p)),
                None => (auth, None),
            },
        };
        if let Some(p) = port {
            if p.parse::<u16>().is_err() {
                return Err(format!("`{url}`: `{p}` is not a port"));
            }
        }
        if host.is_empty() {
            return Err(format!("`{url}` has no host"));
        }
        Ok(Self {
            url: url.trim_end_matches('/').to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::BaseUrl;

    #[test]
    fn takes_http_and_https_with_ports_and_prefixes() {
        assert_eq!(
            BaseUrl::parse("http://127.0.0.1:9/v1/").unwrap().url,
            "http://127.0.0.1:9/v1"
        );
        assert_eq!(
            BaseUrl::parse("https://api.example.com").unwrap().url,
            "https://api.example.com"
        );
        assert!(BaseUrl::parse("ftp://x")
            .unwrap_err()
            .contains("not an http:// or https:// URL"));
        assert!(BaseUrl::parse("http://x:port")
            .unwrap_err()
            .contains("not a port"));
        assert!(BaseUrl::parse("https:///v1")
            .unwrap_err()
            .contains("no host"));
    }

    #[test]
    fn a_url_with_credentials_is_refused_without_showing_them() {
        let e = BaseUrl::parse("http://user:hunter2@127.0.0.1:9/v1").unwrap_err();
        assert!(
            e.starts_with("`http://***@127.0.0.1:9/v1` holds credentials"),
            "{e}"
        );
        let e = BaseUrl::parse("https://user:hunter2@example.test").unwrap_err();
        assert!(!e.contains("hunter2"), "{e}");
        assert_eq!(BaseUrl::parse("http://h:1/p/").unwrap().url, "http://h:1/p");
    }
}
