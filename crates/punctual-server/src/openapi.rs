//! The OpenAPI document, generated from the handlers' annotations and the request and
//! response types. Served at `/openapi.json`; a test checks it lists every route of
//! API.md.

use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

use crate::{api, error, ops, routes, schema};

#[derive(OpenApi)]
#[openapi(
    info(title = "punctual", description = "Durable delayed tasks that fire on time. Errors answer \
        {\"error\": {\"code\", \"message\", \"field\"}}; when the server has tokens, every path but \
        /healthz and /readyz needs 'Authorization: Bearer <token>'."),
    paths(
        routes::put_task, routes::post_tasks, routes::get_task, routes::delete_task, routes::cancel_tag,
        routes::list_tasks, routes::list_queues, routes::get_queue, routes::activity, routes::lease, routes::ack, routes::acks,
        routes::extend, routes::list_dead, routes::retry_dead, routes::delete_dead,
        ops::healthz, ops::readyz, ops::metrics, ops::openapi_json, ops::index,
    ),
    components(schemas(
        error::ErrorBody, error::ErrorDetail, schema::Task, schema::Duration, schema::Time, schema::Backoff,
        schema::Repeat, api::TaskBody, api::BatchBody, api::ScheduleResponse, api::BatchResponse,
        api::BatchResult, api::CancelledResponse, api::TaskList, api::QueueSummary, api::QueueListResponse,
        api::QueueDetail, api::LagMs, api::LeaseBody, api::LeaseResponse, api::LeaseItem, api::AckBody,
        api::AckItem, api::AcksBody, api::AcksResponse, api::AckResult, api::ExtendBody, api::ExtendResponse,
        api::OutcomeName, api::ActivityResponse, api::RecentOutcome, ops::Status,
    )),
    modifiers(&BearerAuth),
    security(("bearer" = [])),
)]
pub(crate) struct ApiDoc;

struct BearerAuth;

impl Modify for BearerAuth {
    fn modify(&self, doc: &mut utoipa::openapi::OpenApi) {
        let components = doc.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
        );
    }
}
