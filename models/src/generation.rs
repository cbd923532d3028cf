//! [`Generation`]: a sequence's tokens handed over one at a time as the GPU makes them. The
//! next token is chosen on the GPU (its argmax, or its draw: `Ops::sample`) and each decode
//! step's list reads the token the step before left there, so the steps are queued two ahead
//! ([`QUEUED`]) and run back to back: the host's submission, wait and read-back of one step
//! overlap the next step's run instead of sitting between them.

use crate::llama::Read;
use crate::{Llama, ModelError, Sampler};
use std::collections::VecDeque;
use std::time::Duration;
use vkprism::Submission;

/// Decode steps in flight at once while generating: the one running and the next.
const QUEUED: usize = 2;

/// One generated token.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Generated {
    /// The token.
    pub token: u32,
    /// The GPU time of the step that chose it, where timing is on ([`Llama::set_timing`]).
    pub gpu_time: Option<Duration>,
}

/// A step queued on the GPU: its run and its decode list.
struct Queued {
    run: Submission,
    list: usize,
}

/// The tokens [`Llama::generation`] generates, in order, as an iterator: after an error, or
/// after the last token (the `n`-th, or the first stop token), it yields nothing more. Steps
/// queued past a stop token are waited for and forgotten (the model's position stays at the
/// last token handed over); dropping the iterator early waits for those in flight the same way.
pub struct Generation<'a> {
    model: &'a mut Llama,
    sampler: &'a mut Sampler,
    stop: &'a [u32],
    /// The prompt, until the first step runs it.
    prompt: Option<Vec<u32>>,
    /// Tokens still to hand over.
    left: usize,
    /// The last token handed over.
    last: u32,
    /// What a queued step reads back: its argmax or its draw.
    read: Read,
    /// Steps in flight, oldest first.
    queued: VecDeque<Queued>,
    ended: bool,
}

impl<'a> Generation<'a> {
    /// Generation after `prompt` (checked, the sequence started over, room for `n` tokens
    /// made sure of by the caller).
    pub(crate) fn new(
        model: &'a mut Llama,
        prompt: &[u32],
        n: usize,
        sampler: &'a mut Sampler,
        stop: &'a [u32],
    ) -> Generation<'a> {
        let read = Read::token_of(sampler.sampling());
        Generation {
            model,
            sampler,
            stop,
            prompt: Some(prompt.to_vec()),
            left: n,
            last: 0,
            read,
            queued: VecDeque::new(),
            ended: n == 0,
        }
    }

    /// The next token: the prompt's step's, or the oldest queued step's.
    fn advance(&mut self) -> Result<Generated, ModelError> {
        let token = match (self.prompt.take(), self.queued.pop_front()) {
            (Some(prompt), _) => self.model.sample_next(&prompt, self.sampler)?,
            (None, Some(mut q)) => {
                q.run.wait()?;
                self.model.finish_queued(q.list, self.read)?
            }
            // A step is queued for every token left; were none, the step runs now.
            (None, None) => self.model.sample_next(&[self.last], self.sampler)?,
        };
        self.left -= 1;
        self.last = token;
        if self.left == 0 || self.stop.contains(&token) {
            self.end();
        } else {
            if self.queued.is_empty() {
                self.model.place_token(token, self.read)?;
            }
            self.queue()?;
        }
        Ok(Generated {
            token,
            gpu_time: self.model.last_gpu_time(),
        })
    }

    /// Queues the next steps, up to [`QUEUED`] in flight and no more than tokens are left.
    fn queue(&mut self) -> Result<(), ModelError> {
        while self.queued.len() < QUEUED.min(self.left) {
            let position = self.model.position() + self.queued.len();
            let seed = self.read.seed(self.sampler);
            let (run, list) = self.model.queue_decode(position, self.read, seed)?;
            self.queued.push_back(Queued { run, list });
        }
        Ok(())
    }

    /// Nothing more to hand over: the steps in flight waited for (their runs dropped) and
    /// forgotten.
    fn end(&mut self) {
        self.ended = true;
        self.queued.clear();
    }
}

impl Iterator for Generation<'_> {
    type Item = Result<Generated, ModelError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.ended {
            return None;
        }
        let r = self.advance();
        if r.is_err() {
            self.end();
        }
        Some(r)
    }
}
