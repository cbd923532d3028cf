//! A list's run in flight: the fence every run of a list signals, which runs were submitted and
//! which were seen to finish, and the pending marks on the tensors a run uses. Shared (an
//! `Arc`) by the list, its [`Submission`]s and its [`super::Readback`]s, so each can wait or
//! check without the list.

use super::CommandError;
use crate::device::{destroy_fence, DeviceError, Shared};
use crate::tensor::TensorInner;
use ash::vk;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, MutexGuard};

/// A list's fence and the state of its runs.
pub(crate) struct RunCell {
    pub shared: Arc<Shared>,
    fence: vk::Fence,
    state: Mutex<RunState>,
}

/// Runs of one list: at most one is in flight (`submitted == completed + 1`).
pub(crate) struct RunState {
    /// Runs submitted.
    submitted: u64,
    /// Runs seen to finish (waited for, or polled signalled).
    pub completed: u64,
    /// The tensors whose pending count the run in flight raised (lowered when it is seen to
    /// finish).
    raised: Vec<Arc<TensorInner>>,
}

impl RunState {
    fn pending(&self) -> bool {
        self.submitted > self.completed
    }

    /// The run in flight finished: its tensors are free for the host again.
    fn complete(&mut self) {
        for t in self.raised.drain(..) {
            t.pending.fetch_sub(1, Ordering::AcqRel);
        }
        self.completed = self.submitted;
    }
}

impl RunCell {
    pub fn new(shared: Arc<Shared>, fence: vk::Fence) -> RunCell {
        RunCell {
            shared,
            fence,
            state: Mutex::new(RunState {
                submitted: 0,
                completed: 0,
                raised: Vec::new(),
            }),
        }
    }

    pub fn lock(&self) -> MutexGuard<'_, RunState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether a run was submitted and not seen to finish.
    pub fn is_pending(&self) -> bool {
        self.lock().pending()
    }

    /// Waits (bounded; a timeout poisons the context) for run `seq` unless it was seen to
    /// finish, holding the state meanwhile (no resubmission, no readback read).
    fn wait_for(&self, seq: u64) -> Result<(), DeviceError> {
        let mut state = self.lock();
        if state.completed >= seq {
            return Ok(());
        }
        self.shared.check_usable()?;
        self.shared.wait(self.fence)?;
        state.complete();
        Ok(())
    }

    /// Waits for the run in flight, if any.
    pub fn wait_pending(&self) -> Result<(), DeviceError> {
        let seq = self.lock().submitted;
        self.wait_for(seq)
    }

    /// Whether run `seq` finished, without waiting.
    fn poll(&self, seq: u64) -> Result<bool, DeviceError> {
        let mut state = self.lock();
        if state.completed >= seq {
            return Ok(true);
        }
        self.shared.check_usable()?;
        if self.shared.fence_signalled(self.fence)? {
            state.complete();
            return Ok(true);
        }
        Ok(false)
    }

    /// `Ok` when no run is in flight (a finished one is noted), else
    /// [`CommandError::StillPending`].
    pub fn check_idle(&self) -> Result<(), CommandError> {
        let seq = self.lock().submitted;
        if self.poll(seq)? {
            Ok(())
        } else {
            Err(CommandError::StillPending)
        }
    }

    /// `Ok` when a run finished and none is in flight (timings and readbacks are then
    /// readable): [`CommandError::NotRun`] before any run, [`CommandError::StillPending`] while
    /// one is in flight.
    pub fn check_ran(&self) -> Result<(), CommandError> {
        self.check_idle()?;
        if self.lock().completed == 0 {
            return Err(CommandError::NotRun);
        }
        Ok(())
    }

    /// Runs `f` with the state locked (no run can be submitted meanwhile) if no run is in
    /// flight (a finished one is noted), else [`CommandError::StillPending`].
    pub fn with_idle<R>(
        &self,
        f: impl FnOnce(&RunState) -> Result<R, CommandError>,
    ) -> Result<R, CommandError> {
        let mut state = self.lock();
        if state.pending() {
            self.shared.check_usable()?;
            if !self.shared.fence_signalled(self.fence)? {
                return Err(CommandError::StillPending);
            }
            state.complete();
        }
        f(&state)
    }

    /// As [`RunCell::with_idle`], also needing a finished run: else
    /// [`CommandError::NotComplete`].
    pub fn with_finished<R>(&self, f: impl FnOnce() -> R) -> Result<R, CommandError> {
        let r = self.with_idle(|state| {
            if state.completed == 0 {
                return Err(CommandError::NotComplete);
            }
            Ok(f())
        });
        match r {
            Err(CommandError::StillPending) => Err(CommandError::NotComplete),
            r => r,
        }
    }

    /// Submits `cmd` signalling the fence, raising the pending count of `tensors` under
    /// `Shared::mapped_access` (shared), so no host access to them is under way or starts
    /// until the run is seen to finish.
    ///
    /// # Safety
    /// `cmd` is the finished command buffer of the list this cell belongs to, whose resources
    /// stay alive until the run is seen to finish; no run of it is in flight
    /// ([`RunCell::check_idle`] returned `Ok` since the last submission); `tensors` are the
    /// tensors it uses.
    pub unsafe fn submit(
        self: &Arc<Self>,
        cmd: vk::CommandBuffer,
        tensors: &[Arc<TensorInner>],
    ) -> Result<Submission, CommandError> {
        let shared = &self.shared;
        let _gpu = shared
            .mapped_access
            .read()
            .unwrap_or_else(|e| e.into_inner());
        shared.check_usable()?;
        let mut state = self.lock();
        for t in tensors {
            t.pending.fetch_add(1, Ordering::AcqRel);
        }
        // SAFETY: the fence is this list's and not pending (no run in flight: the caller's
        // contract); the caller vouches for `cmd`.
        if let Err(e) = unsafe { shared.reset_and_submit(cmd, self.fence) } {
            for t in tensors {
                t.pending.fetch_sub(1, Ordering::AcqRel);
            }
            return Err(e.into());
        }
        state.submitted += 1;
        state.raised = tensors.to_vec();
        Ok(Submission {
            run: self.clone(),
            seq: state.submitted,
            waited: false,
        })
    }

    /// Submits `cmd` and waits for it, the caller holding `Shared::mapped_access` (shared)
    /// throughout, so no mapped access overlaps the run and a timeout poisons the context before
    /// that lock is released.
    ///
    /// # Safety
    /// As [`RunCell::submit`] (no run in flight: [`RunCell::wait_pending`] returned `Ok`).
    pub unsafe fn submit_and_wait(&self, cmd: vk::CommandBuffer) -> Result<(), CommandError> {
        let mut state = self.lock();
        // SAFETY: as `submit`: the caller's contract.
        unsafe { self.shared.reset_and_submit(cmd, self.fence) }?;
        state.submitted += 1;
        self.shared.wait(self.fence)?;
        state.complete();
        Ok(())
    }
}

impl Drop for RunCell {
    fn drop(&mut self) {
        let state = self.state.get_mut().unwrap_or_else(|e| e.into_inner());
        if state.pending() {
            // Only after a failed wait (the list leaks itself then too): the fence may still
            // signal, and the tensors must never be freed.
            std::mem::forget(std::mem::take(&mut state.raised));
            return;
        }
        // SAFETY: the fence is this cell's, destroyed once, here; no run is in flight.
        unsafe { destroy_fence(&self.shared, self.fence) };
    }
}

/// A run of a [`super::CommandList`] submitted with [`super::CommandList::submit`] and not
/// necessarily finished. [`Submission::wait`] waits for it (bounded by the fence timeout; a
/// timeout poisons the context, as [`super::CommandList::submit_and_wait`]'s does), and
/// [`Submission::is_done`] asks without waiting. Dropped without a successful wait, it waits
/// (bounded; errors are dropped with it): nothing in flight is forgotten. It keeps what the
/// run needs alive, so it may outlive its list (the list waits for the run when dropped).
#[must_use = "a submission is waited for when dropped: keep it to overlap work, and wait for it"]
pub struct Submission {
    run: Arc<RunCell>,
    /// Which run of the list this is (1 is the first).
    seq: u64,
    /// `wait` returned `Ok`.
    waited: bool,
}

impl Submission {
    /// Waits until the run finished. After `Ok`, the tensors it used may be read and written
    /// by the host again and its [`super::Readback`]s read. Waiting again is
    /// [`CommandError::AlreadyWaited`]; after an error (a device error, a timeout) the context
    /// says what is left ([`crate::Context::is_poisoned`]).
    pub fn wait(&mut self) -> Result<(), CommandError> {
        if self.waited {
            return Err(CommandError::AlreadyWaited);
        }
        self.run.wait_for(self.seq)?;
        self.waited = true;
        Ok(())
    }

    /// Whether the run finished, without waiting (when it did, it counts as waited for, except
    /// that [`Submission::wait`] may still be called once).
    pub fn is_done(&self) -> Result<bool, CommandError> {
        Ok(self.run.poll(self.seq)?)
    }
}

impl Drop for Submission {
    fn drop(&mut self) {
        if !self.waited && !self.run.shared.is_poisoned() {
            let _ = self.run.wait_for(self.seq);
        }
    }
}

impl std::fmt::Debug for Submission {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Submission")
            .field("run", &self.seq)
            .field("waited", &self.waited)
            .finish()
    }
}
