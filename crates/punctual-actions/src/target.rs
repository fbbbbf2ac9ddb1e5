//! Deliveries of tasks that carry their own HTTP target (API.md, "HTTP targets"): the
//! webhook protocol of [`crate::webhook`] — the same answer table, `Punctual-Delivery`,
//! `Punctual-Signature` — to the task's URL, with its method, headers, timeout and
//! body.
//!
//! Invariants: the egress policy guards every target twice, since its URL came from an
//! API caller: a host that is an IP literal is checked here before each send (the
//! server also refuses a refused literal at schedule time), and a name is checked by
//! the shared client's resolver at every connection, so a name that resolves only to
//! refused addresses fails (dead, with the refusal as `last_error`). Redirects are not
//! followed (the shared client's policy). The signing secrets are the queue action's
//! when it has one, else the server's `[targets] secret_env` (and
//! `previous_secret_env`); none means unsigned.

use std::sync::Arc;

use punctual_core::{Clock, Delivery, Outcome, Target, TargetMethod};

use crate::egress::{EgressPolicy, RefusalNote};
use crate::http::{FinalStatuses, Sender};
use crate::secret::SigningSecrets;
use crate::trace::TraceHeaders;
use crate::webhook::{SignedRequest, parse_url, send, standard_body};

/// Sends target deliveries of an action, with what its runtime shares (the pooled
/// client, the egress policy, the targets' secret, the trace headers).
#[derive(Debug)]
pub(crate) struct TargetSender {
    pub(crate) client: reqwest::Client,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) egress: Arc<EgressPolicy>,
    pub(crate) secret: Option<SigningSecrets>,
    pub(crate) note: RefusalNote,
    pub(crate) trace: TraceHeaders,
}

impl TargetSender {
    /// Delivers one try of `delivery` to `target`, signed with `queue_secret` if given,
    /// else with the server's targets secret.
    pub(crate) async fn deliver(
        &self,
        delivery: &Delivery,
        target: &Target,
        queue_secret: Option<&SigningSecrets>,
    ) -> Outcome {
        let url = match parse_url(target.url(), "target.url") {
            Ok(url) => url,
            Err(e) => return Outcome::fail(format!("target {}: {e}", target.url())),
        };
        let what = format!("target {url}");
        if let Err(refusal) = self.egress.check_url(&url) {
            return self.note.refused(&what, &refusal);
        }
        let fired_at = self.clock.now();
        // Every method carries the body, as API.md says (a GET too).
        let body = match target.custom_body() {
            Some(custom) => match serde_json::to_vec(custom) {
                Ok(body) => body,
                Err(e) => return Outcome::fail(format!("cannot encode the target's body as JSON: {e}")),
            },
            None => match standard_body(delivery, fired_at) {
                Ok(body) => body,
                Err(outcome) => return outcome,
            },
        };
        let sender = Sender {
            client: self.client.clone(),
            timeout: target.delivery_timeout(),
            finals: FinalStatuses::default(),
            clock: Arc::clone(&self.clock),
            note: self.note.clone(),
            trace: self.trace.clone(),
        };
        let request = SignedRequest {
            method: method_of(target.http_method()),
            url: &url,
            headers: target.headers(),
            body: Some(body),
            secret: queue_secret.or(self.secret.as_ref()),
            timeout: target.delivery_timeout(),
            what,
        };
        send(&sender, request, delivery, fired_at).await
    }
}

fn method_of(method: TargetMethod) -> reqwest::Method {
    match method {
        TargetMethod::Post => reqwest::Method::POST,
        TargetMethod::Put => reqwest::Method::PUT,
        TargetMethod::Patch => reqwest::Method::PATCH,
        TargetMethod::Get => reqwest::Method::GET,
        TargetMethod::Delete => reqwest::Method::DELETE,
    }
}
