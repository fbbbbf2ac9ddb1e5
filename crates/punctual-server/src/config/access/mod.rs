//! Scoped access: which bearer tokens the server takes, what each may do (`grant`),
//! and which permission every route needs (`rules`); here, the `[[access]]` tables of
//! the file, validated into [`AccessToken`]s.
//!
//! A token is either unlimited (`tokens = [...]`, `--token`, `PUNCTUAL_TOKENS`) or
//! scoped (`[[access]]`): a set of [`Permission`]s and a list of [`QueuePattern`]s. A
//! scoped token that leaves out `permissions` has all four, one that leaves out
//! `queues` covers every queue (`["*"]`), so an unlimited token is the [`Grant`] with
//! everything (API.md: "A token with no limits may do everything").
//!
//! Each table gives its token as `token = "…"` or `token_env = "VAR"` (exactly one;
//! the variable must be set, non-empty, when the server starts), `permissions` (of
//! `read`, `schedule`, `work`, `admin`; left out: all four) and `queues` (name
//! patterns, see [`QueuePattern`]; left out: every queue) and `rate` (`"100/1s"`: the
//! most requests this token may make per window on each server, [`IngressLimit`];
//! left out: no limit), and `name`, what logs call it (of `A-Z a-z 0-9 . _ : -`, one
//! per table; left out: `access.<n>`, the table's place in the file; an unlimited
//! token goes by `tokens.<n>`, its place in the list, and every call to a server
//! without tokens by `anyone`). Every error names the line at fault and never the
//! token itself.
//!
//! Invariant: a token has one grant. The same token twice — in `tokens` (or
//! `--token`) and an `[[access]]` table, or in two tables — is an error on the line of
//! the second, so which grant applies never depends on the order of the file.

mod grant;
mod limit;
mod rules;

use std::ops::Range;

use toml::Spanned;

pub use grant::{AccessToken, Permission, QueuePattern};
pub(crate) use grant::{Auth, Grant};
pub(crate) use limit::IngressLimit;
pub(crate) use rules::{DASHBOARD_FILES, Rule, Scope, is_open, rule};

use super::ConfigError;
use super::raw::RawAccess;

/// The scoped tokens of the file; `tokens` are the unlimited ones the server runs
/// with (from the file or the flags), each with its line when from the file.
pub(super) fn access_tokens(
    raw: &[Spanned<RawAccess>],
    tokens: &[(String, Option<Range<usize>>)],
    at: &dyn Fn(Range<usize>, String) -> ConfigError,
    line: &dyn Fn(&Range<usize>) -> usize,
) -> Result<Vec<AccessToken>, ConfigError> {
    let mut scoped: Vec<(AccessToken, Range<usize>)> = Vec::with_capacity(raw.len());
    let mut names: Vec<(String, Range<usize>)> = Vec::with_capacity(raw.len());
    for (index, table) in raw.iter().enumerate() {
        let (token, span) = token_of(table, at)?;
        let name = match &table.get_ref().name {
            Some(name) => {
                if let Err(punctual_core::Error::Invalid { reason, .. }) =
                    punctual_core::check_name("token", name.get_ref(), NAME_MAX_LEN)
                {
                    return Err(at(name.span(), reason));
                }
                if let Some((_, first)) = names.iter().find(|(n, _)| n == name.get_ref()) {
                    return Err(at(
                        name.span(),
                        format!(
                            "the name '{}' is already given on line {}: each [[access]] table names its token \
                             apart, so logs tell them apart",
                            name.get_ref(),
                            line(first)
                        ),
                    ));
                }
                names.push((name.get_ref().clone(), name.span()));
                name.get_ref().clone()
            }
            None => format!("access.{}", index + 1),
        };
        let mut permissions = Vec::new();
        if let Some(list) = &table.get_ref().permissions {
            if list.get_ref().is_empty() {
                return Err(at(
                    list.span(),
                    "permissions = [] allows nothing: name some of read, schedule, work, admin, \
                     or leave permissions out for all of them"
                        .into(),
                ));
            }
            for name in list.get_ref() {
                let permission = Permission::parse(name.get_ref()).map_err(|m| at(name.span(), m))?;
                if !permissions.contains(&permission) {
                    permissions.push(permission);
                }
            }
        }
        let mut queues = Vec::new();
        if let Some(list) = &table.get_ref().queues {
            if list.get_ref().is_empty() {
                return Err(at(
                    list.span(),
                    "queues = [] covers no queue: name patterns such as \"order.*\", \
                     or leave queues out for every queue"
                        .into(),
                ));
            }
            for text in list.get_ref() {
                queues.push(QueuePattern::parse(text.get_ref()).map_err(|m| at(text.span(), m))?);
            }
        }
        let first = tokens
            .iter()
            .find(|(t, _)| *t == token)
            .map(|(_, s)| s.clone())
            .or_else(|| scoped.iter().find(|(s, _)| s.token() == token).map(|(_, s)| Some(s.clone())));
        if let Some(first) = first {
            let where_ = match first {
                Some(first) => format!("line {}", line(&first)),
                None => "--token or PUNCTUAL_TOKENS".to_owned(),
            };
            return Err(at(
                span,
                format!("this token is already given on {where_}: a token has one grant, so give each token once"),
            ));
        }
        let mut access = AccessToken::new(token, &permissions, queues).named(name);
        if let Some(rate) = &table.get_ref().rate {
            let parsed = punctual_core::policy::Rate::parse(rate.get_ref())
                .map_err(|m| at(rate.span(), format!("rate: {m}")))?;
            access = access.limited_to(parsed);
        }
        scoped.push((access, span));
    }
    Ok(scoped.into_iter().map(|(token, _)| token).collect())
}

/// The longest token name.
const NAME_MAX_LEN: usize = 64;

/// A token as it must be written: printable ASCII, no spaces.
pub(super) fn check_token(token: &str) -> Result<(), String> {
    if token.is_empty() {
        return Err("a token cannot be empty".into());
    }
    if token.bytes().any(|b| !b.is_ascii_graphic()) {
        return Err("a token is printable ASCII without spaces (it travels in an HTTP header)".into());
    }
    Ok(())
}

/// The token of one table and the span to name it by.
fn token_of(
    table: &Spanned<RawAccess>,
    at: &dyn Fn(Range<usize>, String) -> ConfigError,
) -> Result<(String, Range<usize>), ConfigError> {
    let raw = table.get_ref();
    match (&raw.token, &raw.token_env) {
        (Some(_), Some(env)) => {
            Err(at(env.span(), "give token or token_env, not both: one [[access]] table is one token".into()))
        }
        (None, None) => Err(at(
            table.span(),
            "an [[access]] table needs its token: token = \"…\" or token_env = \"VARIABLE\"".into(),
        )),
        (Some(token), None) => {
            check_token(token.get_ref()).map_err(|m| at(token.span(), m))?;
            Ok((token.get_ref().clone(), token.span()))
        }
        (None, Some(env)) => {
            let var = env.get_ref();
            let value = match std::env::var(var) {
                Ok(value) if !value.is_empty() => value,
                _ => {
                    return Err(at(
                        env.span(),
                        format!(
                            "token_env: the environment variable {var} is not set: set it to the token \
                             before starting the server"
                        ),
                    ));
                }
            };
            check_token(&value).map_err(|m| at(env.span(), format!("token_env: the value of {var}: {m}")))?;
            Ok((value, env.span()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Permission;
    use crate::config::testing::{error_line, file};

    #[test]
    fn the_example_of_api_md_is_read() {
        // PATH is set wherever tests run (the workspace forbids the unsafe set_var).
        let path = std::env::var("PATH").unwrap();
        let s = file(
            r#"tokens = ["s3cret"]

[[access]]                          # a scoped token (those in `tokens` may do everything)
token_env = "PATH"                  # or token = "…"
permissions = ["schedule", "read"]  # read | schedule | work | admin
queues = ["order.*"]                # name patterns (default: every queue)

[[access]]
token = "everything"
"#,
        )
        .unwrap();
        assert_eq!(s.access.len(), 2);
        let debug = format!("{:?}", s.access);
        assert!(!debug.contains(&path) && !debug.contains("everything"), "{debug}");
        let options = crate::shared::HttpOptions::from(&s);
        assert_eq!(options.access, s.access);
        let auth = super::Auth::new(&options.tokens, &options.access);
        let shop = auth.identify(path.as_bytes()).unwrap().grant;
        assert!(shop.may(Permission::Schedule, "order.cancel") && !shop.may(Permission::Work, "order.cancel"));
        assert!(!shop.may(Permission::Read, "billing"));
        let all = auth.identify(b"everything").unwrap().grant;
        assert!(all.may_everywhere(Permission::Admin), "left out: every permission on every queue");
        assert!(auth.identify(b"s3cret").unwrap().grant.may_everywhere(Permission::Admin));
    }

    #[test]
    fn a_scoped_token_may_have_an_ingress_limit() {
        let s = file("[[access]]\ntoken = \"limited\"\nrate = \"2/1m\"\n\n[[access]]\ntoken = \"free\"\n").unwrap();
        let auth = super::Auth::new(&[], &s.access);
        let limit = auth.identify(b"limited").unwrap().limit.expect("a limit");
        assert_eq!(limit.rate().to_string(), "2/1m");
        assert!(auth.identify(b"free").unwrap().limit.is_none());
    }

    #[test]
    fn a_token_of_the_flags_cannot_be_scoped_too() {
        let args = crate::config::ServeArgs { tokens: vec!["a".into()], ..Default::default() };
        let text = "[[access]]\ntoken = \"a\"\npermissions = [\"read\"]\n";
        let e = crate::config::settings(&args, Some((std::path::Path::new("f.toml"), text))).unwrap_err();
        assert_eq!(e.line(), Some(2));
        assert!(e.message().contains("already given on --token or PUNCTUAL_TOKENS"), "{e}");
    }

    #[test]
    fn bad_tables_are_errors_on_their_line() {
        let cases: &[(&str, usize, &str)] = &[
            ("[[access]]\ntoken = \"a\"\npermissions = [\"read\", \"write\"]\n", 3, "'write' is not a permission"),
            ("[[access]]\ntoken = \"a\"\n\nqueues = [\"order/*\"]\n", 4, "holds '/'"),
            ("[[access]]\ntoken = \"a\"\nqueues = [\"\"]\n", 3, "cannot be empty"),
            ("[[access]]\ntoken = \"a\"\ntoken_env = \"X\"\n", 3, "not both"),
            ("[[access]]\npermissions = [\"read\"]\n", 1, "needs its token"),
            (
                "[[access]]\ntoken_env = \"PUNCTUAL_SURELY_UNSET_ACCESS_9\"\n",
                2,
                "PUNCTUAL_SURELY_UNSET_ACCESS_9 is not set",
            ),
            ("tokens = [\"a\"]\n[[access]]\ntoken = \"a\"\n", 3, "already given on line 1"),
            ("[[access]]\ntoken = \"b\"\n[[access]]\ntoken = \"b\"\n", 4, "already given on line 2"),
            ("[[access]]\ntoken = \"has space\"\n", 2, "printable"),
            ("[[access]]\ntoken = \"a\"\npermissions = []\n", 3, "allows nothing"),
            ("[[access]]\ntoken = \"a\"\nqueues = []\n", 3, "covers no queue"),
            ("[[access]]\ntoken = \"a\"\nqueue = [\"x\"]\n", 3, "queue"),
            ("[[access]]\ntoken = \"a\"\nrate = \"100\"\n", 3, "rate: '100' is not a rate"),
            ("[[access]]\ntoken = \"a\"\nrate = \"0/1s\"\n", 3, "at least 1"),
        ];
        for (text, line, needle) in cases {
            let (found, message) = error_line(text);
            assert_eq!(found, Some(*line), "{text:?}: {message}");
            assert!(message.contains(needle), "{text:?}: {message}");
            assert!(!message.contains("has space"), "the token is not shown: {message}");
        }
    }
}
