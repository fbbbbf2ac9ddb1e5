//! Chat robots: WeCom (WeChat Work) group robot, DingTalk custom robot, Feishu/Lark
//! custom bot, Slack incoming webhook. Each renders a text template, builds that
//! platform's JSON (with @-mentions where it has them), signs it where the platform
//! signs, and reads the platform's own error body.
//!
//! What each platform expects, from its public documentation (as summarised in the
//! pages cited; formats checked against them, not copied):
//!
//! - **WeCom** group robot (developer.work.weixin.qq.com, document path 91770):
//!   `POST https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=KEY` with
//!   `{"msgtype":"text","text":{"content","mentioned_list","mentioned_mobile_list"}}`
//!   (`"@all"` in `mentioned_list` mentions everyone); answers
//!   `{"errcode":0,"errmsg":"ok"}`. A robot takes 20 messages a minute; over that it
//!   answers errcode 45009 ("api freq out of limit"); -1 is "system busy".
//! - **DingTalk** custom robot (open.dingtalk.com, "custom robot access"):
//!   `POST https://oapi.dingtalk.com/robot/send?access_token=…` with
//!   `{"msgtype":"text","text":{"content"},"at":{"atMobiles","atUserIds","isAtAll"}}`;
//!   a mention shows only if the content also contains `@<mobile or user id>`. With
//!   "additional signing", the query also carries `timestamp` (epoch ms) and `sign` =
//!   urlencode(base64(HMAC-SHA256(key = secret, "<timestamp>\n<secret>"))). Answers
//!   `{"errcode":0,"errmsg":"ok"}`; 20 messages a minute per robot, over that it is
//!   throttled for 10 minutes (errcode 130101, "send too fast"); 90030 is "webhook
//!   over limit".
//! - **Feishu/Lark** custom bot (open.feishu.cn, "custom bot usage guide"):
//!   `POST https://open.feishu.cn/open-apis/bot/v2/hook/<id>` with
//!   `{"msg_type":"text","content":{"text"}}`; mentions are `<at user_id="ou_…"></at>`
//!   in the text (`user_id="all"` for everyone). With signature verification the body
//!   also carries `timestamp` (epoch seconds, as a string) and `sign` =
//!   base64(HMAC-SHA256(key = "<timestamp>\n<secret>", empty message)). Answers
//!   `{"code":0,"msg":"success"}` (older deployments: `{"StatusCode":0,…}`);
//!   19021 is a bad signature, 11232 the frequency limit (100 a minute, 5 a second).
//! - **Slack** incoming webhook (api.slack.com, "incoming webhooks" and the 2016
//!   change log "improving error conditions"): `POST` `{"text"}`; mentions are
//!   `<@U…>` and `<!channel>` in the text. Answers `200 ok`; errors are HTTP
//!   statuses with a short body (`400 invalid_payload`, `403 action_prohibited`,
//!   `404 channel_not_found`, `410 channel_is_archived`), `429` with `Retry-After`.
//!
//! Outcomes: success → done; a platform's rate-limit code → retry after that
//! platform's window; its "busy" code, or a 2xx without a result code → retry; any
//! other platform error code (bad key, bad signature) → dead, with the code and message
//! as `last_error` — trying again would not help until someone fixes the
//! configuration and retries the dead task. An answer without a platform code is read
//! as a webhook's is: a status of the queue's [`FinalStatuses`] (default 400, 413,
//! 415, 422) → dead; 410 → dead too (a robot answers it for an archived channel: the
//! message was not shown, unlike a webhook receiver's "done"); every other status, a
//! timeout or a connection error → retry (after `Retry-After` when given). A template
//! error → dead.

use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use hmac::{Hmac, KeyInit, Mac};
use punctual_core::{Delivery, Outcome, Timestamp};
use serde_json::{Value as Json, json};
use sha2::Sha256;

use crate::error::ActionError;
use crate::http::{Answer, FinalStatuses, Sender, transport_failure};
use crate::secret::Secret;
use crate::template::Templates;
use crate::webhook::parse_url;

/// A chat platform.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Platform {
    /// WeCom (WeChat Work) group robot.
    Wecom,
    /// DingTalk custom robot.
    Dingtalk,
    /// Feishu / Lark custom bot.
    Feishu,
    /// Slack incoming webhook.
    Slack,
}

impl Platform {
    /// The name used in the configuration (`kind = "wecom"`).
    pub fn name(self) -> &'static str {
        match self {
            Platform::Wecom => "wecom",
            Platform::Dingtalk => "dingtalk",
            Platform::Feishu => "feishu",
            Platform::Slack => "slack",
        }
    }

    /// The endpoint used when the configuration gives no `url` (WeCom only: its key
    /// travels as the secret).
    pub fn default_url(self) -> Option<&'static str> {
        match self {
            Platform::Wecom => Some("https://qyapi.weixin.qq.com/cgi-bin/webhook/send"),
            _ => None,
        }
    }

    /// Whether mentions by mobile number exist on the platform.
    pub fn has_mobile_mentions(self) -> bool {
        matches!(self, Platform::Wecom | Platform::Dingtalk)
    }

    /// The platform's "too many messages" codes in a 200 body, and how long it
    /// throttles (see the module docs).
    fn rate_limited(self, code: i64) -> Option<Duration> {
        match (self, code) {
            (Platform::Wecom, 45009) => Some(Duration::from_secs(60)),
            (Platform::Dingtalk, 130101 | 90030) => Some(Duration::from_secs(600)),
            (Platform::Feishu, 11232) => Some(Duration::from_secs(60)),
            _ => None,
        }
    }

    /// Codes that mean "busy, try again".
    fn busy(self, code: i64) -> bool {
        matches!((self, code), (Platform::Wecom | Platform::Dingtalk, -1))
    }
}

/// A chat robot's settings. Text and mentions are templates.
///
/// `Debug` shows the URL's scheme and host only: a robot's URL carries its credential
/// (DingTalk's `access_token`, Slack's and Feishu's hook path).
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ChatConfig {
    pub platform: Platform,
    /// The robot's webhook URL; WeCom may leave it out and give its key as `secret`.
    pub url: Option<String>,
    /// WeCom: the robot key (the `key` URL parameter). DingTalk and Feishu: the
    /// signing secret. Slack: not used.
    pub secret: Option<Secret>,
    /// The message text (template).
    pub text: String,
    /// Users to mention, by platform user id (templates; an empty result is skipped).
    pub mention: Vec<String>,
    /// Users to mention by mobile number (WeCom, DingTalk; templates).
    pub mention_mobiles: Vec<String>,
    /// Mention everyone in the group.
    pub mention_all: bool,
}

impl std::fmt::Debug for ChatConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChatConfig")
            .field("platform", &self.platform)
            .field("url", &self.url.as_deref().map(redacted_url))
            .field("secret", &self.secret)
            .field("text", &self.text)
            .field("mention", &self.mention)
            .field("mention_mobiles", &self.mention_mobiles)
            .field("mention_all", &self.mention_all)
            .finish()
    }
}

/// `https://host/<redacted>`: what of a robot's URL may be shown.
fn redacted_url(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(parsed) => format!("{}://{}/<redacted>", parsed.scheme(), parsed.host_str().unwrap_or("")),
        Err(_) => "<redacted>".to_owned(),
    }
}

impl ChatConfig {
    /// A robot of `platform` at `url` sending `text`.
    pub fn new(platform: Platform, url: Option<String>, text: impl Into<String>) -> ChatConfig {
        ChatConfig {
            platform,
            url,
            secret: None,
            text: text.into(),
            mention: Vec::new(),
            mention_mobiles: Vec::new(),
            mention_all: false,
        }
    }
}

/// What one message becomes on the wire.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ChatRequest {
    pub(crate) url: reqwest::Url,
    pub(crate) body: Json,
}

pub(crate) struct Chat {
    platform: Platform,
    url: reqwest::Url,
    secret: Option<Secret>,
    mentions: usize,
    mobiles: usize,
    mention_all: bool,
    templates: Templates,
    sender: Sender,
}

impl std::fmt::Debug for Chat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The URL of a robot is itself a credential (access_token, hook id): host only.
        f.debug_struct("Chat")
            .field("platform", &self.platform)
            .field("host", &self.url.host_str())
            .field("signed", &self.secret.is_some())
            .field("timeout", &self.sender.timeout)
            .field("final_statuses", &self.sender.finals.as_slice())
            .finish()
    }
}

impl Chat {
    pub(crate) fn new(config: ChatConfig, mut templates: Templates, sender: Sender) -> Result<Chat, ActionError> {
        let platform = config.platform;
        let url = match (&config.url, platform.default_url()) {
            (Some(url), _) => parse_url(url, "url")?,
            (None, Some(default)) => parse_url(default, "url")?,
            (None, None) => {
                return Err(ActionError::invalid("url", format!("a {} robot needs its webhook url", platform.name())));
            }
        };
        match platform {
            Platform::Wecom if config.secret.is_none() && !url.query_pairs().any(|(k, _)| k == "key") => {
                return Err(ActionError::invalid(
                    "secret",
                    "a wecom robot needs its key: secret_env = \"VAR\" (or key=… in the url)",
                ));
            }
            Platform::Slack if config.secret.is_some() => {
                return Err(ActionError::invalid(
                    "secret",
                    "a slack incoming webhook has no secret: its url is the credential",
                ));
            }
            _ => {}
        }
        if !config.mention_mobiles.is_empty() && !platform.has_mobile_mentions() {
            return Err(ActionError::invalid(
                "mention_mobiles",
                format!("{} has no mentions by mobile number; use mention (user ids)", platform.name()),
            ));
        }
        templates.add("text", &config.text)?;
        for (i, source) in config.mention.iter().enumerate() {
            templates.add(&format!("mention[{i}]"), source)?;
        }
        for (i, source) in config.mention_mobiles.iter().enumerate() {
            templates.add(&format!("mention_mobiles[{i}]"), source)?;
        }
        Ok(Chat {
            platform,
            url,
            secret: config.secret,
            mentions: config.mention.len(),
            mobiles: config.mention_mobiles.len(),
            mention_all: config.mention_all,
            templates,
            sender,
        })
    }

    pub(crate) async fn deliver(&self, delivery: &Delivery) -> Outcome {
        let now = self.sender.clock.now();
        let context = self.templates.context(delivery, now);
        let rendered = (|| {
            let text = self.templates.render("text", &context)?;
            let mut ids = Vec::new();
            for i in 0..self.mentions {
                ids.push(self.templates.render(&format!("mention[{i}]"), &context)?);
            }
            let mut mobiles = Vec::new();
            for i in 0..self.mobiles {
                mobiles.push(self.templates.render(&format!("mention_mobiles[{i}]"), &context)?);
            }
            Ok::<_, String>((text, ids, mobiles))
        })();
        let (text, ids, mobiles) = match rendered {
            Ok(parts) => parts,
            Err(e) => return Outcome::fail(e),
        };
        let keep =
            |list: Vec<String>| list.into_iter().map(|s| s.trim().to_owned()).filter(|s| !s.is_empty()).collect();
        let message = Message { text, ids: keep(ids), mobiles: keep(mobiles), all: self.mention_all };
        let request = build(self.platform, &self.url, self.secret.as_ref(), &message, now);
        let what = format!("{} robot", self.platform.name());
        let body = match serde_json::to_vec(&request.body) {
            Ok(body) => body,
            Err(e) => return Outcome::fail(format!("cannot encode the message as JSON: {e}")),
        };
        let sent = self
            .sender
            .client
            .post(request.url)
            .timeout(self.sender.timeout)
            .header(reqwest::header::CONTENT_TYPE, "application/json; charset=utf-8")
            .body(body)
            .send()
            .await;
        let response = match sent {
            Ok(response) => response,
            Err(e) => return transport_failure(&what, &e.without_url(), self.sender.timeout, &self.sender.note),
        };
        match Answer::read(response).await {
            Ok(answer) => outcome_of(self.platform, &answer, &what, self.sender.clock.now(), &self.sender.finals),
            Err(e) => transport_failure(&what, &e.without_url(), self.sender.timeout, &self.sender.note),
        }
    }
}

/// A rendered message.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Message {
    pub(crate) text: String,
    pub(crate) ids: Vec<String>,
    pub(crate) mobiles: Vec<String>,
    pub(crate) all: bool,
}

/// The platform's request for `message` sent at `now`.
pub(crate) fn build(
    platform: Platform,
    url: &reqwest::Url,
    secret: Option<&Secret>,
    message: &Message,
    now: Timestamp,
) -> ChatRequest {
    let mut url = url.clone();
    let body = match platform {
        Platform::Wecom => {
            if let Some(key) = secret {
                url.query_pairs_mut().append_pair("key", key.expose());
            }
            let mut text = json!({"content": message.text});
            let mut ids = message.ids.clone();
            if message.all {
                ids.push("@all".to_owned());
            }
            if !ids.is_empty() {
                text["mentioned_list"] = json!(ids);
            }
            if !message.mobiles.is_empty() {
                text["mentioned_mobile_list"] = json!(message.mobiles);
            }
            json!({"msgtype": "text", "text": text})
        }
        Platform::Dingtalk => {
            if let Some(secret) = secret {
                let timestamp = now.as_millis().to_string();
                let sign = BASE64.encode(hmac(secret.expose().as_bytes(), format!("{timestamp}\n{}", secret.expose())));
                // append_pair form-encodes, as DingTalk's urlEncode of the base64 sign.
                url.query_pairs_mut().append_pair("timestamp", &timestamp).append_pair("sign", &sign);
            }
            let mut content = message.text.clone();
            for who in message.mobiles.iter().chain(&message.ids) {
                let tag = format!("@{who}");
                if !content.contains(&tag) {
                    content.push(' ');
                    content.push_str(&tag);
                }
            }
            json!({
                "msgtype": "text",
                "text": {"content": content},
                "at": {"atMobiles": message.mobiles, "atUserIds": message.ids, "isAtAll": message.all},
            })
        }
        Platform::Feishu => {
            let mut text = message.text.clone();
            for id in &message.ids {
                text.push_str(&format!(" <at user_id=\"{}\"></at>", id.replace('"', "")));
            }
            if message.all {
                text.push_str(" <at user_id=\"all\"></at>");
            }
            let mut body = json!({"msg_type": "text", "content": {"text": text}});
            if let Some(secret) = secret {
                let timestamp = (now.as_millis() / 1000).to_string();
                let sign = BASE64.encode(hmac(format!("{timestamp}\n{}", secret.expose()).as_bytes(), ""));
                body["timestamp"] = json!(timestamp);
                body["sign"] = json!(sign);
            }
            body
        }
        Platform::Slack => {
            let mut prefix: Vec<String> = message.ids.iter().map(|id| format!("<@{id}>")).collect();
            if message.all {
                prefix.push("<!channel>".to_owned());
            }
            let text =
                if prefix.is_empty() { message.text.clone() } else { format!("{} {}", prefix.join(" "), message.text) };
            json!({"text": text})
        }
    };
    ChatRequest { url, body }
}

fn hmac(key: &[u8], message: impl AsRef<[u8]>) -> Vec<u8> {
    let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(key).expect("HMAC takes a key of any length");
    mac.update(message.as_ref());
    mac.finalize().into_bytes().to_vec()
}

/// The outcome of a platform's answer (see the module docs).
pub(crate) fn outcome_of(
    platform: Platform,
    answer: &Answer,
    what: &str,
    now: Timestamp,
    finals: &FinalStatuses,
) -> Outcome {
    let body: Option<Json> = serde_json::from_slice(&answer.body).ok();
    let code_and_message = body.as_ref().and_then(|body| {
        let (code, message) = match platform {
            Platform::Wecom | Platform::Dingtalk => ("errcode", "errmsg"),
            Platform::Feishu if body.get("code").is_some() => ("code", "msg"),
            Platform::Feishu => ("StatusCode", "StatusMessage"),
            Platform::Slack => return None,
        };
        let code = body.get(code)?.as_i64()?;
        Some((code, body.get(message).and_then(Json::as_str).unwrap_or("").to_owned()))
    });
    if let Some((code, message)) = &code_and_message {
        let code = *code;
        if let Some(window) = platform.rate_limited(code) {
            let after = answer.retry_after(now).unwrap_or(window);
            return Outcome::retry_in(after, format!("{what} is rate limited (code {code}: {message})"));
        }
        if platform.busy(code) {
            return Outcome::retry(format!("{what} is busy (code {code}: {message})"));
        }
        if code != 0 && !answer.is_transient() {
            return Outcome::fail(format!("{what} refused the message: code {code}: {message}"));
        }
    }
    if answer.status == reqwest::StatusCode::GONE {
        return Outcome::fail(format!("{what} answered {}: {}", answer.status, answer.quote()));
    }
    if !answer.status.is_success() {
        return answer.refused(what, now, finals);
    }
    match (platform, code_and_message) {
        (Platform::Slack, _) | (_, Some((0, _))) => Outcome::Done,
        (_, _) => {
            Outcome::retry(format!("{what} answered {} without a result code: {}", answer.status, answer.quote()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::StatusCode;
    use reqwest::header::HeaderMap;

    fn answer(status: u16, body: &str) -> Answer {
        Answer {
            status: StatusCode::from_u16(status).unwrap(),
            headers: HeaderMap::new(),
            body: body.as_bytes().to_vec(),
        }
    }

    #[test]
    fn error_codes_in_a_200_are_failures_and_rate_limits_back_off() {
        let now = Timestamp::EPOCH;
        let finals = FinalStatuses::default();
        let of = |p, status, body| outcome_of(p, &answer(status, body), "robot", now, &finals);
        assert_eq!(of(Platform::Wecom, 200, r#"{"errcode":0,"errmsg":"ok"}"#), Outcome::Done);
        assert!(
            matches!(of(Platform::Wecom, 200, r#"{"errcode":93000,"errmsg":"invalid webhook url"}"#), Outcome::Fail(e) if e.contains("93000") && e.contains("invalid webhook url"))
        );
        assert_eq!(
            of(Platform::Wecom, 200, r#"{"errcode":45009,"errmsg":"api freq out of limit"}"#),
            Outcome::retry_in(Duration::from_secs(60), "robot is rate limited (code 45009: api freq out of limit)")
        );
        assert!(matches!(
            of(Platform::Wecom, 200, r#"{"errcode":-1,"errmsg":"system busy"}"#),
            Outcome::Retry { after: None, .. }
        ));
        assert!(
            matches!(of(Platform::Dingtalk, 200, r#"{"errcode":130101,"errmsg":"send too fast"}"#), Outcome::Retry { after: Some(d), .. } if d == Duration::from_secs(600))
        );
        assert!(matches!(
            of(Platform::Dingtalk, 200, r#"{"errcode":310000,"errmsg":"sign not match"}"#),
            Outcome::Fail(_)
        ));
        assert_eq!(of(Platform::Feishu, 200, r#"{"code":0,"msg":"success","data":{}}"#), Outcome::Done);
        assert_eq!(of(Platform::Feishu, 200, r#"{"StatusCode":0,"StatusMessage":"success"}"#), Outcome::Done);
        assert!(
            matches!(of(Platform::Feishu, 200, r#"{"code":19021,"msg":"sign match fail or timestamp is not within one hour from current time"}"#), Outcome::Fail(e) if e.contains("19021"))
        );
        assert!(matches!(
            of(Platform::Feishu, 400, r#"{"code":11232,"msg":"frequency limited"}"#),
            Outcome::Retry { after: Some(_), .. }
        ));
        assert_eq!(of(Platform::Slack, 200, "ok"), Outcome::Done);
        assert!(
            matches!(of(Platform::Slack, 410, "channel_is_archived"), Outcome::Fail(e) if e.contains("channel_is_archived"))
        );
        assert!(matches!(of(Platform::Slack, 429, "rate_limited"), Outcome::Retry { .. }));
        assert!(matches!(of(Platform::Wecom, 502, "<html>bad gateway</html>"), Outcome::Retry { .. }));
        assert!(matches!(of(Platform::Wecom, 200, "<html>portal</html>"), Outcome::Retry { .. }));
        // Statuses without a platform code follow the final statuses, as webhooks do.
        assert!(matches!(of(Platform::Slack, 400, "invalid_payload"), Outcome::Fail(_)));
        assert!(matches!(of(Platform::Slack, 404, "channel_not_found"), Outcome::Retry { .. }));
        assert!(matches!(of(Platform::Wecom, 401, "<html>login</html>"), Outcome::Retry { .. }));
        let finals = FinalStatuses::new([404]).unwrap();
        assert!(matches!(
            outcome_of(Platform::Slack, &answer(404, "channel_not_found"), "robot", now, &finals),
            Outcome::Fail(_)
        ));
    }

    #[test]
    fn debug_hides_the_credentials_in_a_robot_url() {
        let mut config = ChatConfig::new(
            Platform::Dingtalk,
            Some("https://oapi.dingtalk.com/robot/send?access_token=tok-123".into()),
            "hi",
        );
        config.secret = Some(Secret::new("SECsecret"));
        let debug = format!("{config:?}");
        assert!(!debug.contains("tok-123") && !debug.contains("SECsecret"), "{debug}");
        assert!(debug.contains("https://oapi.dingtalk.com/<redacted>"), "{debug}");
    }

    #[test]
    fn signatures_follow_each_platform() {
        let secret = Secret::new("SECtest");
        let now = Timestamp::from_millis(1_700_000_000_123);
        let message = Message { text: "hi".into(), ids: vec!["u1".into()], mobiles: vec![], all: false };
        let url = reqwest::Url::parse("https://oapi.dingtalk.com/robot/send?access_token=abc").unwrap();
        let req = build(Platform::Dingtalk, &url, Some(&secret), &message, now);
        let pairs: Vec<(String, String)> =
            req.url.query_pairs().map(|(k, v)| (k.into_owned(), v.into_owned())).collect();
        // python3: base64.b64encode(hmac.new(b"SECtest", b"1700000000123\nSECtest", hashlib.sha256).digest())
        assert_eq!(pairs[0], ("access_token".into(), "abc".into()));
        assert_eq!(pairs[1], ("timestamp".into(), "1700000000123".into()));
        assert_eq!(pairs[2], ("sign".into(), "lrMq5E54T40t3FfGVjxdvoqIbXlWY6mzkZYiVoI6emk=".into()));
        assert!(req.url.as_str().ends_with("&sign=lrMq5E54T40t3FfGVjxdvoqIbXlWY6mzkZYiVoI6emk%3D"), "{}", req.url);
        assert_eq!(req.body["text"]["content"], "hi @u1");
        let url = reqwest::Url::parse("https://open.feishu.cn/open-apis/bot/v2/hook/x").unwrap();
        let req = build(Platform::Feishu, &url, Some(&secret), &message, now);
        assert_eq!(req.body["timestamp"], "1700000000");
        // python3: base64.b64encode(hmac.new(b"1700000000\nSECtest", b"", hashlib.sha256).digest())
        assert_eq!(req.body["sign"], "G7XpBpG8NgG02fJOAhX6FRAObIljmFoxVReo8I62pEk=");
    }
}
