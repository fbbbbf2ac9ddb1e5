//! Guards against API tokens given in the environment (`PUNCTUAL_TOKENS`, so they are
//! not in `ps`) being ignored by the real binary, or read as one token with the comma
//! in it: each token of the list lets a request through, anything else is `401`.
//!
//! Which routes need a token, how the header is read, and that a refused request
//! changes nothing are asserted in process by the server's own tests
//! (`crates/punctual-server/tests/http/auth.rs`); tokens from `--token` and the config file
//! through the binary by `config.rs`.

use crate::common;

use common::{Api, server_builder, start};

#[test]
fn tokens_from_the_environment_guard_the_api() {
    let server = start(server_builder().env("PUNCTUAL_TOKENS", "alpha,beta"));
    let api = Api::new(server.url());
    for authorization in [None, Some("Bearer s3cret"), Some("Bearer alpha,beta"), Some("Bearer alph")] {
        let resp = api.raw(reqwest::Method::GET, "/v1/queues", None, None, authorization);
        resp.expect_error(401, "unauthorized", None, &format!("GET /v1/queues with {authorization:?}"));
    }
    for token in ["alpha", "beta"] {
        api.token(token).get("/v1/queues").expect(200, &format!("GET /v1/queues with the token {token}"));
    }
    api.get("/healthz").expect(200, "GET /healthz needs no token");
}
