//! Multi-round-trip requests (2026-07-28): a `tools/call`, `prompts/get` or
//! `resources/read` answered `input_required` is fulfilled with the client's own
//! sampling, elicitation and roots callbacks, then sent again with a new id, the
//! answers and the server's `requestState` echoed verbatim, at most
//! [`ClientBuilder::max_input_rounds`](super::ClientBuilder::max_input_rounds) times.

use mcpflow_protocol::mrtr::{
    InputRequest, InputRequests, InputResponse, InputResponses, MaybeInputRequired,
};
use mcpflow_protocol::{
    CallToolRequestParams, GetPromptRequestParams, ListRootsResult, ReadResourceRequestParams,
};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::{ClientContext, ClientHandle};
use crate::error::SessionError;
use crate::session::RequestOptions;

/// The params of a request the server may answer `input_required`: sent again with the
/// answers and the server's `requestState`.
pub(super) trait Resumable: Serialize + Clone {
    /// Carry `responses` (none when empty) and `state` on the next round, in place of
    /// what the last round carried.
    fn resume(&mut self, responses: InputResponses, state: Option<String>);
}

macro_rules! resumable {
    ($($params:ty),*) => {$(
        impl Resumable for $params {
            fn resume(&mut self, responses: InputResponses, state: Option<String>) {
                self.input_responses = (!responses.is_empty()).then_some(responses);
                self.request_state = state;
            }
        }
    )*};
}

resumable!(
    CallToolRequestParams,
    GetPromptRequestParams,
    ReadResourceRequestParams
);

/// Send `method` and, while the server answers `input_required`, fulfil its input
/// requests and retry. Never cached: each round is a fresh request.
pub(super) async fn request_with_input<P, R>(
    handle: &ClientHandle,
    method: &str,
    params: &P,
    options: RequestOptions,
) -> Result<R, SessionError>
where
    P: Resumable,
    R: DeserializeOwned + 'static,
{
    let codec = |detail: String| SessionError::Codec {
        method: method.into(),
        detail,
    };
    let mut params = params.clone();
    let limit = handle.shared.max_input_rounds;
    let mut rounds = 0usize;
    loop {
        let answer: Result<(MaybeInputRequired<R>, _), SessionError> = handle
            .peer
            .request_operated(method, &params, options.clone())
            .await;
        let answer = match answer {
            Ok((MaybeInputRequired::Complete(result), operation)) => {
                super::note_tool_error(&result, &operation);
                return Ok(result);
            }
            Ok((answer, _)) => answer,
            Err(error) => {
                // A -32042 error's URLs are shown as in the handshake era.
                handle.show_url_elicitations(&error).await;
                return Err(error);
            }
        };
        let needed = match answer {
            MaybeInputRequired::Complete(result) => return Ok(result),
            MaybeInputRequired::InputRequired(needed) => needed,
        };
        if needed.input_requests.as_ref().is_none_or(|r| r.is_empty())
            && needed.request_state.is_none()
        {
            // Sending it again would be the same request.
            return Err(codec(
                "the server answered input_required with neither inputRequests nor requestState"
                    .to_owned(),
            ));
        }
        rounds += 1;
        if rounds > limit {
            return Err(codec(format!(
                "the server still asked for input after {limit} rounds (max_input_rounds)"
            )));
        }
        let responses = fulfil(handle, method, needed.input_requests.unwrap_or_default()).await?;
        params.resume(responses, needed.request_state);
        tracing::debug!(
            method,
            round = rounds,
            "retrying with the input the server asked for"
        );
    }
}

/// Answer every input request with the matching callback.
pub(super) async fn fulfil(
    handle: &ClientHandle,
    method: &str,
    requests: InputRequests,
) -> Result<InputResponses, SessionError> {
    let handlers = &handle.shared.handlers;
    let failed = |what: &str, detail: String| SessionError::Codec {
        method: method.into(),
        detail: format!("the server asked for {what}, and {detail}"),
    };
    let mut responses = InputResponses::new();
    for (key, request) in requests {
        let context = ClientContext::without_request(handle.clone());
        let response = match request {
            InputRequest::Elicit(params) => {
                let handler = handlers.elicitation.as_ref().ok_or_else(|| {
                    failed(
                        "elicitation",
                        "this client has no elicitation callback".to_owned(),
                    )
                })?;
                let result = handler(params, context)
                    .await
                    .map_err(|e| failed("elicitation", format!("the callback failed: {e}")))?;
                InputResponse::Elicit(result)
            }
            InputRequest::CreateMessage(params) => {
                let handler = handlers.sampling.as_ref().ok_or_else(|| {
                    failed(
                        "sampling",
                        "this client has no sampling callback".to_owned(),
                    )
                })?;
                let result = handler(*params, context)
                    .await
                    .map_err(|e| failed("sampling", format!("the callback failed: {e}")))?;
                InputResponse::CreateMessage(Box::new(result))
            }
            InputRequest::ListRoots(_) => {
                let handler = handlers.roots.as_ref().ok_or_else(|| {
                    failed("roots", "this client has no roots callback".to_owned())
                })?;
                let roots = handler(context)
                    .await
                    .map_err(|e| failed("roots", format!("the callback failed: {e}")))?;
                InputResponse::ListRoots(ListRootsResult::new(roots))
            }
            other => {
                tracing::warn!(
                    method = other.method(),
                    key,
                    "ignored an input request of an unknown method"
                );
                continue;
            }
        };
        responses.insert(key, response);
    }
    Ok(responses)
}
