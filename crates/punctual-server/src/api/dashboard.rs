//! The dashboard: its page at `/` and its files at `/dashboard/{file}` (ES modules and
//! the style sheet), embedded in the binary (`dashboard/`: no build step, no CDN). The
//! page loads `app.js` as a module; it and the modules it imports name each other by
//! relative path (`./queue.js`), so every module is a file of [`FILES`].
//!
//! Invariants: every file is served with its content type (a module script that is not
//! `text/javascript` is refused by the browser) and `Cache-Control: no-cache`, so a new
//! binary's files are never mixed with an old one's; no file holds data or needs a
//! token (each data call of the page sends the token typed into it); a name not in
//! [`FILES`] is a 404.

use axum::http::header;
use axum::response::{IntoResponse, Response};

use crate::error::ApiError;
use crate::extract::Params;

const JAVASCRIPT: &str = "text/javascript; charset=utf-8";

/// The dashboard's files: name, content type, text.
const FILES: &[(&str, &str, &str)] = &[
    ("app.js", JAVASCRIPT, include_str!("../dashboard/app.js")),
    ("access.js", JAVASCRIPT, include_str!("../dashboard/access.js")),
    ("api.js", JAVASCRIPT, include_str!("../dashboard/api.js")),
    ("calendars.js", JAVASCRIPT, include_str!("../dashboard/calendars.js")),
    ("charts.js", JAVASCRIPT, include_str!("../dashboard/charts.js")),
    ("dom.js", JAVASCRIPT, include_str!("../dashboard/dom.js")),
    ("format.js", JAVASCRIPT, include_str!("../dashboard/format.js")),
    ("forms.js", JAVASCRIPT, include_str!("../dashboard/forms.js")),
    ("groups.js", JAVASCRIPT, include_str!("../dashboard/groups.js")),
    ("history.js", JAVASCRIPT, include_str!("../dashboard/history.js")),
    ("overview.js", JAVASCRIPT, include_str!("../dashboard/overview.js")),
    ("page.js", JAVASCRIPT, include_str!("../dashboard/page.js")),
    ("queue.js", JAVASCRIPT, include_str!("../dashboard/queue.js")),
    ("schedule.js", JAVASCRIPT, include_str!("../dashboard/schedule.js")),
    ("settings.js", JAVASCRIPT, include_str!("../dashboard/settings.js")),
    ("task.js", JAVASCRIPT, include_str!("../dashboard/task.js")),
    ("style.css", "text/css; charset=utf-8", include_str!("../dashboard/style.css")),
];

const INDEX: &str = include_str!("../dashboard/index.html");

#[utoipa::path(get, path = "/", tag = "operations",
    summary = "The dashboard: the page itself needs no token; each of its data calls sends the one typed in it",
    responses((status = 200, description = "HTML", content_type = "text/html")))]
pub(crate) async fn index() -> Response {
    asset("text/html; charset=utf-8", INDEX)
}

/// One of the dashboard's files (`/dashboard/{file}`).
pub(crate) async fn file(params: Params) -> Response {
    let name = params.get("file");
    match FILES.iter().find(|(file, _, _)| *file == name) {
        Some((_, content_type, text)) => asset(content_type, text),
        None => ApiError::NotFound(format!("the dashboard has no file {name}")).into_response(),
    }
}

/// An embedded file; revalidated on each load, since a new binary may bring a new one.
fn asset(content_type: &'static str, body: &'static str) -> Response {
    ([(header::CONTENT_TYPE, content_type), (header::CACHE_CONTROL, "no-cache")], body).into_response()
}

#[cfg(test)]
mod tests {
    use super::{FILES, INDEX};

    /// The files a text names: `from "./x.js"` of a module, `/dashboard/x` of the page.
    fn named(text: &str, opening: &str, closing: char) -> Vec<String> {
        text.split(opening)
            .skip(1)
            .filter_map(|rest| rest.split_once(closing).map(|(name, _)| name.to_owned()))
            .collect()
    }

    /// A module the page cannot load would leave it blank: every import and every file
    /// the page names is served, and every served module is imported by some file.
    #[test]
    fn every_file_the_page_names_is_served_and_every_module_is_used() {
        let served: Vec<&str> = FILES.iter().map(|(name, _, _)| *name).collect();
        let mut used = named(INDEX, "\"/dashboard/", '"');
        for (name, _, text) in FILES.iter().filter(|(name, _, _)| name.ends_with(".js")) {
            for import in named(text, " from \"./", '"') {
                assert!(served.contains(&import.as_str()), "{name} imports {import}, which is not served");
                used.push(import);
            }
        }
        for name in &used {
            assert!(served.contains(&name.as_str()), "the page names /dashboard/{name}, which is not served");
        }
        for name in served {
            assert!(used.iter().any(|u| u == name), "{name} is served but nothing loads it");
        }
        assert!(INDEX.contains(r#"<script type="module" src="/dashboard/app.js">"#), "app.js is loaded as a module");
    }
}
