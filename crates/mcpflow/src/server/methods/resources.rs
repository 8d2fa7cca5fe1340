//! `resources/list`, `resources/templates/list`, `resources/read`, and
//! `resources/subscribe` and `resources/unsubscribe`.

use std::sync::PoisonError;

use mcpflow_protocol::methods::method;
use mcpflow_protocol::resources::{
    ListResourceTemplatesResult, ListResourcesResult, SubscribeRequestParams,
};
use mcpflow_protocol::{
    EmptyResult, ErrorCode, ErrorObject, PaginatedRequestParams, ReadResourceRequestParams,
};
use serde::Serialize;

use super::{Params, optional, page, required, result};
use crate::server::ServerContext;
use crate::session::Reply;

pub(crate) async fn list(params: Params, cx: ServerContext) -> Result<Reply, ErrorObject> {
    let p: PaginatedRequestParams = optional(&params)?;
    let server = cx.server();
    let (resources, next_cursor) = page(
        &server.registry().resources,
        p.cursor.as_deref(),
        server.inner.page_size,
        |e| e.resource.clone(),
    )?;
    result(&ListResourcesResult {
        resources,
        next_cursor,
        ..Default::default()
    })
}

pub(crate) async fn templates_list(
    params: Params,
    cx: ServerContext,
) -> Result<Reply, ErrorObject> {
    let p: PaginatedRequestParams = optional(&params)?;
    let server = cx.server();
    let (resource_templates, next_cursor) = page(
        &server.registry().templates,
        p.cursor.as_deref(),
        server.inner.page_size,
        |e| e.template.clone(),
    )?;
    result(&ListResourceTemplatesResult {
        resource_templates,
        next_cursor,
        ..Default::default()
    })
}

/// Read the resource with this URI, or the first template it matches.
pub(crate) async fn read(params: Params, cx: ServerContext) -> Result<Reply, ErrorObject> {
    let p: ReadResourceRequestParams = required(&params)?;
    let found = cx.server().registry().find_resource(&p.uri);
    let (handler, vars) = found.ok_or_else(|| {
        ErrorObject::new(
            ErrorCode::RESOURCE_NOT_FOUND,
            format!("resource not found: {}", p.uri),
        )
        .with_data(serde_json::json!({ "uri": p.uri }))
    })?;
    raw_result(&handler(p.uri, vars, cx).await?)
}

/// A result that may run to megabytes (a resource's contents), as raw JSON: a large one
/// then goes out after its response's head, and a transport that keeps whole messages
/// (streamable HTTP) takes its buffer instead of copying it.
fn raw_result<T: Serialize>(value: &T) -> Result<Reply, ErrorObject> {
    serde_json::value::to_raw_value(value)
        .map(Reply::from)
        .map_err(ErrorObject::internal)
}

pub(crate) async fn subscribe(params: Params, cx: ServerContext) -> Result<Reply, ErrorObject> {
    let uri = subscription(&params, &cx, method::RESOURCES_SUBSCRIBE)?;
    subscriptions(&cx).insert(uri);
    result(&EmptyResult::default())
}

pub(crate) async fn unsubscribe(params: Params, cx: ServerContext) -> Result<Reply, ErrorObject> {
    let uri = subscription(&params, &cx, method::RESOURCES_UNSUBSCRIBE)?;
    subscriptions(&cx).remove(&uri);
    result(&EmptyResult::default())
}

/// The URI a (un)subscription names, if this server takes subscriptions at all.
fn subscription(params: &Params, cx: &ServerContext, method: &str) -> Result<String, ErrorObject> {
    if !cx.server().inner.subscriptions {
        return Err(ErrorObject::method_not_found(method));
    }
    let p: SubscribeRequestParams = required(params)?;
    Ok(p.uri)
}

fn subscriptions(
    cx: &ServerContext,
) -> std::sync::MutexGuard<'_, std::collections::HashSet<String>> {
    cx.connection()
        .subscriptions
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
}
