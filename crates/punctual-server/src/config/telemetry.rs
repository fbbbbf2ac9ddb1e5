//! The `[telemetry]` table: traces exported over OTLP (HTTP/protobuf) to an
//! OpenTelemetry Collector or any OTLP receiver (docs/operations.md, "OpenTelemetry").
//!
//! Traces are off unless an endpoint is given: `otlp_endpoint` in the file, else the
//! standard environment variables, `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (the traces URL
//! itself) then `OTEL_EXPORTER_OTLP_ENDPOINT`. An endpoint is the receiver's base URL
//! (`http://127.0.0.1:4318`), to which the traces path `/v1/traces` is added as the
//! OTLP specification says; a base URL that already ends with it is refused, since the
//! path would then be there twice. `service_name` defaults to `OTEL_SERVICE_NAME`, then
//! `punctual`; `export_interval` is how long spans wait to be sent in a batch.
//!
//! Invariant: [`TelemetrySettings::traces_url`] is an http(s) URL with a host, no
//! user, query or fragment, whose path ends with `/v1/traces`.

use std::ops::Range;
use std::time::Duration;

use serde::Deserialize;
use toml::Spanned;

use super::ConfigError;
use crate::extract::ApiDuration;

/// The traces path of an OTLP/HTTP receiver, added to a base endpoint.
const TRACES_PATH: &str = "v1/traces";
/// How long spans wait to be sent when the file does not say (the SDK's default).
const DEFAULT_EXPORT_INTERVAL: Duration = Duration::from_secs(5);
/// The service name when neither the file nor `OTEL_SERVICE_NAME` gives one.
const DEFAULT_SERVICE_NAME: &str = "punctual";

/// `[telemetry]` as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawTelemetry {
    otlp_endpoint: Option<Spanned<String>>,
    service_name: Option<Spanned<String>>,
    export_interval: Option<Spanned<ApiDuration>>,
}

/// Traces are exported: where, as which service, how often.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TelemetrySettings {
    /// The URL spans are posted to, `…/v1/traces`.
    pub(crate) traces_url: String,
    /// The resource's `service.name`.
    pub(crate) service_name: String,
    /// How long a span waits, at most, to be sent with others.
    pub(crate) export_interval: Duration,
}

/// The traces the file's `[telemetry]` (if any) and the environment (`env` reads a
/// variable) ask for; `None`: traces are off.
pub(super) fn telemetry_table(
    raw: Option<&Spanned<RawTelemetry>>,
    env: &dyn Fn(&str) -> Option<String>,
    at: &dyn Fn(Range<usize>, String) -> ConfigError,
) -> Result<Option<TelemetrySettings>, ConfigError> {
    let table = raw.map(Spanned::get_ref);
    let from_env = |name: &str| env(name).filter(|value| !value.trim().is_empty());
    let in_env = |name: &str, message: String| ConfigError::new(format!("environment variable {name}"), None, message);
    let traces_url = match table.and_then(|t| t.otlp_endpoint.as_ref()) {
        Some(endpoint) => traces_url(endpoint.get_ref()).map_err(|m| at(endpoint.span(), m))?,
        None => match (from_env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"), from_env("OTEL_EXPORTER_OTLP_ENDPOINT")) {
            (Some(url), _) => {
                let name = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT";
                checked_url(url.trim()).map(|url| url.to_string()).map_err(|m| in_env(name, m))?
            }
            (None, Some(base)) => traces_url(base.trim()).map_err(|m| in_env("OTEL_EXPORTER_OTLP_ENDPOINT", m))?,
            (None, None) => match raw {
                Some(table) => {
                    return Err(at(
                        table.span(),
                        "[telemetry] exports traces to otlp_endpoint, which it lacks: set it to the OTLP/HTTP \
                         receiver's base URL (otlp_endpoint = \"http://127.0.0.1:4318\"), or set \
                         OTEL_EXPORTER_OTLP_ENDPOINT"
                            .into(),
                    ));
                }
                None => return Ok(None),
            },
        },
    };
    let service_name = match table.and_then(|t| t.service_name.as_ref()) {
        Some(name) if name.get_ref().trim().is_empty() => {
            return Err(at(name.span(), "service_name cannot be empty".into()));
        }
        Some(name) => name.get_ref().clone(),
        None => from_env("OTEL_SERVICE_NAME").unwrap_or_else(|| DEFAULT_SERVICE_NAME.to_owned()),
    };
    let export_interval = match table.and_then(|t| t.export_interval.as_ref()) {
        Some(interval) if interval.get_ref().0.is_zero() => {
            return Err(at(interval.span(), "export_interval must be longer than 0".into()));
        }
        Some(interval) => interval.get_ref().0,
        None => DEFAULT_EXPORT_INTERVAL,
    };
    Ok(Some(TelemetrySettings { traces_url, service_name, export_interval }))
}

/// The traces URL of the base endpoint `base`: its path with `/v1/traces` added.
fn traces_url(base: &str) -> Result<String, String> {
    let mut url = checked_url(base)?;
    let path = url.path().trim_end_matches('/').to_owned();
    if path.ends_with(&format!("/{TRACES_PATH}")) {
        return Err(format!(
            "'{base}' already ends with /{TRACES_PATH}, which punctual adds: give the receiver's base URL \
             ({})",
            base.trim_end_matches('/').trim_end_matches(TRACES_PATH).trim_end_matches('/')
        ));
    }
    url.set_path(&format!("{path}/{TRACES_PATH}"));
    Ok(url.to_string())
}

/// `text` as an http(s) URL with a host and no user, query or fragment.
fn checked_url(text: &str) -> Result<reqwest::Url, String> {
    let example = "e.g. http://127.0.0.1:4318";
    let not_http = || format!("'{text}' must be an http:// or https:// URL with a host (OTLP over HTTP), {example}");
    // `127.0.0.1:4318` is no URL, and `localhost:4318` one of the scheme `localhost`.
    if !text.contains("://") {
        return Err(not_http());
    }
    let url = reqwest::Url::parse(text).map_err(|e| format!("'{text}' is not a URL ({e}): {example}"))?;
    if !matches!(url.scheme(), "http" | "https") || !url.has_host() {
        return Err(not_http());
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(format!(
            "'{}' holds a user or password: give credentials in OTEL_EXPORTER_OTLP_HEADERS instead",
            url.host_str().unwrap_or_default()
        ));
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err(format!("'{text}' cannot have a query or a fragment: {example}"));
    }
    Ok(url)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::{TelemetrySettings, telemetry_table};
    use crate::config::testing::{error_line, file};

    /// `[telemetry]` read from `text` with `vars` as the environment.
    fn read(text: &str, vars: &[(&str, &str)]) -> Result<Option<TelemetrySettings>, crate::config::ConfigError> {
        let raw: super::super::raw::RawConfig = toml::from_str(text).unwrap();
        let env = |name: &str| vars.iter().find(|(n, _)| *n == name).map(|(_, v)| (*v).to_owned());
        let at = |span: std::ops::Range<usize>, message: String| {
            let line = text[..span.start].matches('\n').count() + 1;
            crate::config::ConfigError::new("punctual.toml", Some(line), message)
        };
        telemetry_table(raw.telemetry.as_ref(), &env, &at)
    }

    #[test]
    fn traces_are_off_unless_an_endpoint_is_given() {
        assert_eq!(read("", &[]).unwrap(), None);
        assert_eq!(read("", &[("OTEL_EXPORTER_OTLP_ENDPOINT", "  ")]).unwrap(), None, "an empty variable is unset");
        assert_eq!(read("", &[("OTEL_SERVICE_NAME", "svc")]).unwrap(), None, "a name alone turns nothing on");
    }

    #[test]
    fn the_traces_path_is_added_to_the_base_endpoint() {
        let settings = read("[telemetry]\notlp_endpoint = \"http://127.0.0.1:4318\"\n", &[]).unwrap().unwrap();
        assert_eq!(settings.traces_url, "http://127.0.0.1:4318/v1/traces");
        assert_eq!(settings.service_name, "punctual");
        assert_eq!(settings.export_interval, Duration::from_secs(5));
        let cases = [
            ("http://collector:4318/", "http://collector:4318/v1/traces"),
            ("https://otel.example.com/prefix", "https://otel.example.com/prefix/v1/traces"),
            ("https://otel.example.com/prefix/", "https://otel.example.com/prefix/v1/traces"),
        ];
        for (base, url) in cases {
            let text = format!("[telemetry]\notlp_endpoint = \"{base}\"\n");
            assert_eq!(read(&text, &[]).unwrap().unwrap().traces_url, url, "{base}");
        }
    }

    #[test]
    fn the_file_comes_before_the_environment() {
        let vars = [("OTEL_EXPORTER_OTLP_ENDPOINT", "http://from-env:4318"), ("OTEL_SERVICE_NAME", "from-env")];
        let text = "[telemetry]\notlp_endpoint = \"http://from-file:4318\"\nservice_name = \"reminders\"\n\
                    export_interval = \"100ms\"\n";
        let settings = read(text, &vars).unwrap().unwrap();
        assert_eq!(settings.traces_url, "http://from-file:4318/v1/traces");
        assert_eq!(settings.service_name, "reminders");
        assert_eq!(settings.export_interval, Duration::from_millis(100));
        // Without the file's endpoint, the environment's; a traces URL is taken as is.
        let settings = read("", &vars).unwrap().unwrap();
        assert_eq!(
            (settings.traces_url.as_str(), settings.service_name.as_str()),
            ("http://from-env:4318/v1/traces", "from-env")
        );
        let traces = [("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://traces:4318/custom"), vars[0]];
        assert_eq!(read("", &traces).unwrap().unwrap().traces_url, "http://traces:4318/custom");
        let settings = read("[telemetry]\nexport_interval = \"1s\"\n", &vars).unwrap().unwrap();
        assert_eq!(settings.export_interval, Duration::from_secs(1), "the file's other keys still apply");
    }

    #[test]
    fn bad_endpoints_are_refused_with_their_line() {
        let cases: &[(&str, &str)] = &[
            ("otlp_endpoint = \"127.0.0.1:4318\"", "http:// or https://"),
            ("otlp_endpoint = \"localhost:4318\"", "http:// or https://"),
            ("otlp_endpoint = \"http://exa mple:4318\"", "is not a URL"),
            ("otlp_endpoint = \"grpc://collector:4317\"", "http:// or https://"),
            (
                "otlp_endpoint = \"http://collector:4318/v1/traces\"",
                "give the receiver's base URL (http://collector:4318)",
            ),
            ("otlp_endpoint = \"http://user:pw@collector:4318\"", "OTEL_EXPORTER_OTLP_HEADERS"),
            ("otlp_endpoint = \"http://collector:4318/?x=1\"", "query"),
            ("otlp_endpoint = \"http://c:4318\"\nservice_name = \"\"", "service_name cannot be empty"),
            ("otlp_endpoint = \"http://c:4318\"\nexport_interval = \"0s\"", "longer than 0"),
            ("otlp_endpoint = \"http://c:4318\"\nexport_interval = \"soon\"", "soon"),
            ("otlp_endpoint = \"http://c:4318\"\nprotocol = \"grpc\"", "protocol"),
        ];
        for (body, needle) in cases {
            let text = format!("listen = \"127.0.0.1:7575\"\n\n[telemetry]\n{body}\n");
            let (line, message) = error_line(&text);
            let expected = 4 + body.lines().count() - 1;
            assert_eq!(line, Some(expected), "{body}: {message}");
            assert!(message.contains(needle), "{body}: {message}");
        }
        let e = read("\n[telemetry]\nservice_name = \"svc\"\n", &[]).unwrap_err();
        assert_eq!(e.line(), Some(2));
        assert!(e.message().contains("lacks"), "{e}");
    }

    #[test]
    fn a_bad_variable_is_refused_by_name() {
        let e = read("", &[("OTEL_EXPORTER_OTLP_ENDPOINT", "collector:4318")]).unwrap_err();
        assert!(e.to_string().starts_with("environment variable OTEL_EXPORTER_OTLP_ENDPOINT: "), "{e}");
        let e = read("", &[("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "ftp://x")]).unwrap_err();
        assert!(e.to_string().starts_with("environment variable OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "), "{e}");
    }

    #[test]
    fn settings_carry_the_table() {
        let s = file("[telemetry]\notlp_endpoint = \"http://127.0.0.1:4318\"\nexport_interval = \"250ms\"\n").unwrap();
        let telemetry = s.telemetry.unwrap();
        assert_eq!(telemetry.traces_url, "http://127.0.0.1:4318/v1/traces");
        assert_eq!(telemetry.export_interval, Duration::from_millis(250));
    }
}
