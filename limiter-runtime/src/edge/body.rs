//! A response body that holds a call's permits in flight until it ends: the one mechanism behind the tower
//! layer's responses and an annotated handler's (feature `axum`).

use std::pin::Pin;
use std::task::{Context, Poll};

use http_body::{Frame, SizeHint};
use pin_project_lite::pin_project;

use crate::Permit;

pin_project! {
    /// `B`, holding a permit until its last frame (or an error) has been read, or it is dropped unread: a
    /// streamed body holds its call's permits in flight for as long as it streams.
    pub(crate) struct HoldingBody<B> {
        #[pin]
        body: B,
        permit: Option<Permit>,
    }
}

impl<B> HoldingBody<B> {
    /// Wraps `body`, holding `permit` (none holds nothing) until it is done.
    pub(crate) fn new(body: B, permit: Option<Permit>) -> Self {
        HoldingBody { body, permit }
    }
}

impl<B: http_body::Body> http_body::Body for HoldingBody<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<B::Data>, B::Error>>> {
        let this = self.project();
        let frame = this.body.poll_frame(cx);
        if matches!(frame, Poll::Ready(None | Some(Err(_)))) {
            // Done: its permits go back now, not when the body is dropped.
            this.permit.take();
        }
        frame
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}
