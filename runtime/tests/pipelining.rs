//! Pipelining: submissions without a wait, several lists in flight, transfers recorded in a
//! list (with the barriers they need), tensor views, the scratch arena, and the misuse of each.
//!
//! Every context here has the validation layer's synchronization validation on as well
//! (`VK_LAYER_VALIDATE_SYNC`, or `VK_LAYER_ENABLES` for older layers, set before the first context): a missing barrier is a `SYNC-HAZARD`
//! message, which fails the test (`assert_clean`), besides the wrong data each test checks.

mod fixtures;

use fixtures::{scale, spin};
use std::sync::{Arc, Once};
use vkprism_runtime::{
    CommandError, CommandList, Context, LoadOptions, LoadedKernel, Pipeline, ScratchArena, Tensor,
    TensorError, TensorFormat,
};
use vkprism_testkit::{assert_clean, assert_close, random};

/// A validated context with synchronization validation on.
fn ctx() -> Context {
    static SYNC: Once = Once::new();
    SYNC.call_once(|| {
        // Set once, before any context of this binary exists (every test comes through here);
        // the layer reads it when an instance is created.
        // Layers from 1.3.275 take `VK_LAYER_VALIDATE_SYNC` and warn about the older
        // `VK_LAYER_ENABLES` (a message, which fails every test); older ones know only that.
        if validation_layer_version() >= ash::vk::make_api_version(0, 1, 3, 275) {
            std::env::set_var("VK_LAYER_VALIDATE_SYNC", "1");
        } else {
            std::env::set_var(
                "VK_LAYER_ENABLES",
                "VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT",
            );
        }
    });
    vkprism_testkit::ctx()
}

/// The Khronos validation layer's spec version, 0 where the loader or the layer is missing.
fn validation_layer_version() -> u32 {
    // SAFETY: loading the Vulkan loader runs its initialisation; nothing else in this process
    // is making Vulkan calls yet (this runs before the first context).
    let Ok(entry) = (unsafe { ash::Entry::load() }) else {
        return 0;
    };
    // SAFETY: a global query with no handles.
    let layers = unsafe { entry.enumerate_instance_layer_properties() }.unwrap_or_default();
    layers
        .iter()
        .find(|l| l.layer_name_as_c_str() == Ok(c"VK_LAYER_KHRONOS_validation"))
        .map_or(0, |l| l.spec_version)
}

/// The fp32 `scale` kernel (`y = x * a + b`) with `c = 0`.
fn scale_pipeline(ctx: &Context) -> (Arc<LoadedKernel<scale::Kernel>>, Pipeline<scale::Kernel>) {
    let k = ctx
        .load_with::<scale::Kernel>(&LoadOptions::variant_named("fp32").unwrap())
        .unwrap();
    let p = k.pipeline(&scale::SpecConstants { c: 0.0 }, None).unwrap();
    (k, p)
}

/// Records `y = x * a + b` over `x`'s elements.
fn scale_into(
    list: &mut CommandList,
    p: &Pipeline<scale::Kernel>,
    x: &Tensor,
    y: &Tensor,
    a: f32,
    b: f32,
) {
    let n = x.len() as u32;
    list.dispatch(
        p,
        &scale::BufferBindings { x, y },
        &scale::PushConstants { a, b, n },
        [n, 1, 1],
    )
    .unwrap();
}

fn affine(x: &[f32], a: f32, b: f32) -> Vec<f32> {
    x.iter().map(|v| v * a + b).collect()
}

fn f32_tensor(ctx: &Context, data: &[f32]) -> Tensor {
    Tensor::from_f32(ctx, &[data.len()], TensorFormat::F32, data).unwrap()
}

/// Proves: `submit` returns a `Submission` whose `wait` gives the results; `is_done` answers
/// after it; waiting again is `AlreadyWaited`; the host may touch the tensors after the wait.
#[test]
fn submit_then_wait_gives_the_results() {
    let ctx = ctx();
    let (_k, p) = scale_pipeline(&ctx);
    let xs = random(1000, 1);
    let x = f32_tensor(&ctx, &xs);
    let y = Tensor::new(&ctx, &[1000], TensorFormat::F32).unwrap();
    let mut list = CommandList::new(&ctx).unwrap();
    scale_into(&mut list, &p, &x, &y, 2.0, 1.0);
    let mut s = list.submit().unwrap();
    s.wait().unwrap();
    assert!(s.is_done().unwrap());
    assert!(matches!(s.wait().unwrap_err(), CommandError::AlreadyWaited));
    assert_close(
        &y.download_f32().unwrap(),
        &affine(&xs, 2.0, 1.0),
        1e-6,
        "y",
    );
    // The list runs again, asynchronously or not.
    x.upload_f32(&vec![1.0; 1000]).unwrap();
    let mut again = list.submit().unwrap();
    again.wait().unwrap();
    assert_eq!(y.download_f32().unwrap(), vec![3.0; 1000]);
    list.submit_and_wait().unwrap();
    assert_eq!(y.download_f32().unwrap(), vec![3.0; 1000]);
    assert_clean(&ctx);
}

/// Proves: lists in flight together run in submission order, each seeing the earlier ones'
/// writes (RAW across lists: B reads what A wrote) and not disturbing their reads (WAR across
/// lists: C overwrites what B read), with waits in any order; and a dropped submission waits.
#[test]
fn lists_in_flight_run_in_order_and_see_earlier_writes() {
    let ctx = ctx();
    let (_k, p) = scale_pipeline(&ctx);
    let n = 64 * 256;
    let xs = random(n, 2);
    let x = f32_tensor(&ctx, &xs);
    let y = Tensor::new(&ctx, &[n], TensorFormat::F32).unwrap();
    let z = Tensor::new(&ctx, &[n], TensorFormat::F32).unwrap();
    let mut a = CommandList::new(&ctx).unwrap();
    scale_into(&mut a, &p, &x, &y, 2.0, 0.0); // y = 2x
    let mut b = CommandList::new(&ctx).unwrap();
    scale_into(&mut b, &p, &y, &z, 3.0, 0.0); // z = 3y = 6x
    let mut c = CommandList::new(&ctx).unwrap();
    c.fill(&y, 0.0f32.to_bits()).unwrap(); // y = 0, after b read it
    let mut d = CommandList::new(&ctx).unwrap();
    let last = d.download(&z).unwrap();
    let mut sa = a.submit().unwrap();
    let mut sb = b.submit().unwrap();
    let mut sc = c.submit().unwrap();
    let sd = d.submit().unwrap();
    drop(sd); // waits
    sc.wait().unwrap();
    sb.wait().unwrap();
    sa.wait().unwrap();
    assert_close(
        &z.download_f32().unwrap(),
        &affine(&xs, 6.0, 0.0),
        1e-5,
        "z",
    );
    assert_close(
        &last.read_f32().unwrap(),
        &affine(&xs, 6.0, 0.0),
        1e-5,
        "readback",
    );
    assert_eq!(y.download_f32().unwrap(), vec![0.0; n]);
    assert_clean(&ctx);
}

/// Proves: an upload, a dispatch and a download in one list (the inference step in one
/// submission) give the right data, with a barrier upload→dispatch (RAW on x) and
/// dispatch→download (RAW on y), and none for the independent upload of w.
#[test]
fn upload_dispatch_download_in_one_list() {
    let ctx = ctx();
    let (_k, p) = scale_pipeline(&ctx);
    let n = 4096;
    let xs = random(n, 3);
    let x = Tensor::new(&ctx, &[n], TensorFormat::F32).unwrap();
    let y = Tensor::new(&ctx, &[n], TensorFormat::F32).unwrap();
    let w = Tensor::new(&ctx, &[n], TensorFormat::F32).unwrap();
    let mut list = CommandList::new(&ctx).unwrap();
    list.upload(&x, &xs).unwrap();
    list.upload(&w, &xs).unwrap();
    scale_into(&mut list, &p, &x, &y, -1.0, 0.5);
    let out = list.download(&y).unwrap();
    assert!(matches!(
        out.read_f32().unwrap_err(),
        CommandError::NotComplete
    ));
    assert_eq!(list.barrier_count(), 2);
    assert_eq!(list.transfer_count(), 3);
    assert_eq!(list.len(), 1);
    let mut s = list.submit().unwrap();
    s.wait().unwrap();
    assert_close(
        &out.read_f32().unwrap(),
        &affine(&xs, -1.0, 0.5),
        1e-6,
        "readback",
    );
    assert_eq!(out.shape(), &[n]);
    assert_eq!(w.download_f32().unwrap(), xs);
    assert_clean(&ctx);
}

/// Proves each hazard between dispatches and transfers gets a barrier, with data that would be
/// wrong without it: fill→dispatch (WAW on y: the dispatch's values must win), dispatch→copy
/// (RAW: the copy must see the dispatch's values), copy→dispatch (RAW), copy→copy (RAW),
/// copy→download (RAW), download→fill (WAR: the download must read u before the fill) and
/// dispatch→upload (WAR: the dispatch must read x before the upload overwrites it); and that
/// an access whose hazard is already behind a barrier gets none.
#[test]
fn every_transfer_ordering_gets_its_barrier() {
    let ctx = ctx();
    let (_k, p) = scale_pipeline(&ctx);
    let n = 2048;
    let xs = random(n, 4);
    let x = f32_tensor(&ctx, &xs);
    let [y, z, w, v, u] =
        std::array::from_fn(|_| Tensor::new(&ctx, &[n], TensorFormat::F32).unwrap());
    let mut list = CommandList::new(&ctx).unwrap();
    list.fill(&y, 7.0f32.to_bits()).unwrap();
    scale_into(&mut list, &p, &x, &y, 2.0, 0.0); // fill→dispatch (WAW): barrier 1
    list.copy(&y, &z).unwrap(); // dispatch→copy (RAW): barrier 2
    scale_into(&mut list, &p, &z, &w, 1.0, 1.0); // copy→dispatch (RAW): barrier 3
    list.copy(&w, &v).unwrap(); // dispatch→copy (RAW): barrier 4
    list.copy(&v, &u).unwrap(); // copy→copy (RAW): barrier 5
    let before = list.download(&u).unwrap(); // copy→download (RAW): barrier 6
    list.fill(&u, 0).unwrap(); // download→fill (WAR): barrier 7
                               // Reads x, writes y: y's last write is behind barrier 2, so no barrier.
    scale_into(&mut list, &p, &x, &y, 3.0, 0.0);
    list.upload(&x, &vec![100.0; n]).unwrap(); // dispatch→upload (WAR on x): barrier 8
    list.submit_and_wait().unwrap();
    let want = affine(&xs, 2.0, 1.0);
    assert_close(
        &before.read_f32().unwrap(),
        &want,
        1e-6,
        "u before the fill",
    );
    assert_close(&v.download_f32().unwrap(), &want, 1e-6, "v");
    assert_eq!(u.download_f32().unwrap(), vec![0.0; n]);
    assert_close(
        &y.download_f32().unwrap(),
        &affine(&xs, 3.0, 0.0),
        1e-6,
        "y",
    );
    assert_eq!(x.download_f32().unwrap(), vec![100.0; n]);
    assert_clean(&ctx);
    assert_eq!(list.barrier_count(), 8);
}

/// Proves: re-submitting a list replays the data its upload staged when it was recorded, even
/// after the host wrote the tensor in between; a readback gives the last run's bytes.
#[test]
fn resubmitting_replays_the_recorded_upload() {
    let ctx = ctx();
    let (_k, p) = scale_pipeline(&ctx);
    let n = 256;
    let xs = random(n, 5);
    let x = Tensor::new(&ctx, &[n], TensorFormat::F32).unwrap();
    let y = Tensor::new(&ctx, &[n], TensorFormat::F32).unwrap();
    let mut list = CommandList::new(&ctx).unwrap();
    list.upload(&x, &xs).unwrap();
    scale_into(&mut list, &p, &x, &y, 1.0, 2.0);
    let out = list.download(&y).unwrap();
    list.submit_and_wait().unwrap();
    let want = affine(&xs, 1.0, 2.0);
    assert_close(&out.read_f32().unwrap(), &want, 1e-6, "first run");
    x.upload_f32(&vec![0.0; n]).unwrap();
    y.upload_f32(&vec![0.0; n]).unwrap();
    list.submit().unwrap().wait().unwrap();
    assert_close(&out.read_f32().unwrap(), &want, 1e-6, "second run");
    assert_eq!(x.download_f32().unwrap(), xs);
    assert_clean(&ctx);
}

/// Proves: views share their parent's buffer (a dispatch through views reads and writes only
/// their ranges; bound with a descriptor offset and range), are bounds-checked, work in
/// transfers (concatenation by copying into views, with no copy of the rest), keep the parent
/// alive, and a view of a view starts inside it.
#[test]
fn views_bind_and_transfer_their_range_only() {
    let ctx = ctx();
    let (_k, p) = scale_pipeline(&ctx);
    let x = Tensor::new(&ctx, &[4], TensorFormat::F32).unwrap();
    let align = (x.binding_alignment() as usize / 4).max(1);
    // Halves of an aligned size, so the second half may be bound.
    let half = align * 64;
    let whole: Vec<f32> = (0..2 * half).map(|i| i as f32).collect();
    let buf = f32_tensor(&ctx, &whole);
    let lo = buf.view(0, &[half]).unwrap();
    let hi = buf.view(half, &[half]).unwrap();
    assert!(hi.is_view() && !buf.is_view());
    assert_eq!(hi.offset_bytes(), (half * 4) as u64);
    assert_eq!(hi.download_f32().unwrap(), whole[half..]);
    // hi = lo * 10 through two views of one buffer.
    let mut list = CommandList::new(&ctx).unwrap();
    scale_into(&mut list, &p, &lo, &hi, 10.0, 0.0);
    list.submit_and_wait().unwrap();
    let got = buf.download_f32().unwrap();
    assert_eq!(got[..half], whole[..half]);
    assert_eq!(got[half..], affine(&whole[..half], 10.0, 0.0));

    // Concatenation: two tensors copied into the halves of a third, and one half read back
    // through a view of a view.
    let a: Vec<f32> = vec![1.5; half];
    let b: Vec<f32> = vec![-2.5; half];
    let (ta, tb) = (f32_tensor(&ctx, &a), f32_tensor(&ctx, &b));
    let cat = Tensor::new(&ctx, &[2, half], TensorFormat::F32).unwrap();
    let cat_hi = cat.view(half, &[half]).unwrap();
    let mut list = CommandList::new(&ctx).unwrap();
    list.copy(&ta, &cat.view(0, &[half]).unwrap()).unwrap();
    list.copy(&tb, &cat_hi).unwrap();
    let tail = list
        .download(&cat_hi.view(half - 2, &[2]).unwrap())
        .unwrap();
    list.submit_and_wait().unwrap();
    assert_eq!(cat.download_f32().unwrap(), [a, b.clone()].concat());
    assert_eq!(tail.read_f32().unwrap(), b[..2]);

    // The view keeps the buffer alive.
    let kept = {
        let parent = f32_tensor(&ctx, &[1.0, 2.0, 3.0, 4.0]);
        parent.view(2, &[2]).unwrap()
    };
    assert_eq!(kept.download_f32().unwrap(), [3.0, 4.0]);
    kept.upload_f32(&[5.0, 6.0]).unwrap();
    assert_eq!(kept.download_f32().unwrap(), [5.0, 6.0]);
    assert_clean(&ctx);
}

/// Proves: the scratch arena hands out aligned views usable as temporaries of a chain of
/// dispatches (x → t1 → t2 → y), refuses more than it holds, and reuses its memory after a
/// reset.
#[test]
fn scratch_arena_hands_out_aligned_temporaries() {
    let ctx = ctx();
    let (_k, p) = scale_pipeline(&ctx);
    let n = 1000;
    let xs = random(n, 6);
    let x = f32_tensor(&ctx, &xs);
    let y = Tensor::new(&ctx, &[n], TensorFormat::F32).unwrap();
    let mut arena = ScratchArena::new(&ctx, 3 * 4096 + 2 * 4 * n as u64).unwrap();
    let t1 = arena.alloc(&[n], TensorFormat::F32).unwrap();
    let t2 = arena.alloc(&[n], TensorFormat::F32).unwrap();
    assert_eq!(t2.offset_bytes() % x.binding_alignment().max(4), 0);
    assert!(t2.offset_bytes() >= t1.size_bytes());
    let mut list = CommandList::new(&ctx).unwrap();
    scale_into(&mut list, &p, &x, &t1, 2.0, 0.0);
    scale_into(&mut list, &p, &t1, &t2, 1.0, 1.0);
    scale_into(&mut list, &p, &t2, &y, 3.0, 0.0);
    list.submit().unwrap().wait().unwrap();
    assert_close(
        &y.download_f32().unwrap(),
        &affine(&xs, 6.0, 3.0),
        1e-5,
        "y",
    );
    let used = arena.used();
    let e = arena
        .alloc(&[arena.capacity() as usize], TensorFormat::Raw)
        .unwrap_err();
    assert!(matches!(e, TensorError::ScratchFull { .. }), "{e}");
    assert_eq!(arena.used(), used);
    arena.reset();
    assert_eq!(arena.used(), 0);
    let again = arena.alloc(&[n], TensorFormat::F32).unwrap();
    assert_eq!(again.offset_bytes(), t1.offset_bytes());
    assert_clean(&ctx);
}

/// Proves the misuse errors: a view past the end, a misaligned view bound in a dispatch, a
/// copy between tensors of other sizes or overlapping ranges, a fill of an unaligned view, a
/// readback read before the run, and a transfer into a submitted list.
#[test]
fn misuse_of_views_and_transfers_is_refused() {
    let ctx = ctx();
    let (_k, p) = scale_pipeline(&ctx);
    let t = Tensor::new(&ctx, &[64], TensorFormat::F32).unwrap();
    let e = t.view(60, &[8]).unwrap_err();
    assert!(
        matches!(
            e,
            TensorError::ViewOutOfBounds {
                offset: 60,
                len: 8,
                parent_len: 64
            }
        ),
        "{e}"
    );
    assert!(t.view(usize::MAX, &[2]).is_err());
    assert!(t.view(0, &[65]).is_err());
    assert!(t.view(8, &[0]).is_err());
    let v = t.view(1, &[32]).unwrap();
    let y = Tensor::new(&ctx, &[32], TensorFormat::F32).unwrap();
    let mut list = CommandList::new(&ctx).unwrap();
    let push = scale::PushConstants {
        a: 1.0,
        b: 0.0,
        n: 32,
    };
    let bound = list.dispatch(
        &p,
        &scale::BufferBindings { x: &v, y: &y },
        &push,
        [32, 1, 1],
    );
    if t.binding_alignment() > 4 {
        let e = bound.unwrap_err();
        assert!(
            matches!(e, CommandError::MisalignedView { offset: 4, .. }),
            "{e}"
        );
        assert!(
            e.to_string().contains("minStorageBufferOffsetAlignment"),
            "{e}"
        );
        assert_eq!(list.len(), 0);
    } else {
        bound.unwrap();
        eprintln!("minStorageBufferOffsetAlignment is 4: every f32 view binds");
    }
    let e = list.copy(&t, &y).unwrap_err();
    assert!(
        matches!(e, CommandError::CopySize { src: 256, dst: 128 }),
        "{e}"
    );
    let e = list.copy(&t.view(0, &[32]).unwrap(), &v).unwrap_err();
    assert!(matches!(e, CommandError::OverlappingCopy { .. }), "{e}");
    let i = Tensor::new(&ctx, &[64], TensorFormat::U32).unwrap();
    let e = list.copy(&t, &i).unwrap_err();
    assert!(matches!(e, CommandError::CopyFormat { .. }), "{e}");
    let bytes = Tensor::new(&ctx, &[10], TensorFormat::I8).unwrap();
    let e = list.fill(&bytes.view(1, &[4]).unwrap(), 0).unwrap_err();
    assert!(
        matches!(e, CommandError::FillAlignment { offset: 1, size: 4 }),
        "{e}"
    );
    // A view ending at the end of its buffer's data may fill the padding.
    list.fill(&bytes.view(8, &[2]).unwrap(), 0x0101_0101)
        .unwrap();
    let e = list.upload(&y, &[1.0; 3]).unwrap_err();
    assert!(
        matches!(
            e,
            CommandError::Tensor(TensorError::LengthMismatch { got: 3, want: 32 })
        ),
        "{e}"
    );
    let out = list.download(&bytes).unwrap();
    assert!(matches!(
        out.read_bytes().unwrap_err(),
        CommandError::NotComplete
    ));
    list.submit_and_wait().unwrap();
    assert_eq!(out.read_bytes().unwrap()[8..], [1, 1]);
    let e = list.fill(&y, 0).unwrap_err();
    assert!(matches!(e, CommandError::NotRecording { .. }), "{e}");
    assert_clean(&ctx);
}

/// Proves the misuse of pending work: submitting a list whose run is still in flight is
/// `StillPending`; a host write or read of a tensor (or a view of its buffer) a pending list
/// binds is `TensorError::Pending`, and allowed again once the submission was waited for (or
/// polled done); a readback read while its run is in flight is `NotComplete`; timings and an
/// upload slot's write likewise `StillPending`; dropping a list with a run in flight waits.
#[test]
fn pending_work_refuses_resubmission_and_host_access() {
    let ctx = ctx();
    let k = ctx
        .load_with::<spin::Kernel>(&LoadOptions::variant_named("fp32").unwrap())
        .unwrap();
    let p = k.pipeline(&Default::default(), None).unwrap();
    let n = 64 * 200;
    let x = Tensor::new(&ctx, &[n], TensorFormat::U32).unwrap();
    let other = Tensor::new(&ctx, &[4], TensorFormat::U32).unwrap();
    // Long enough to be in flight for the checks below on any device: at least 0.3 s of GPU
    // time, measured (60,000 steps are about that on lavapipe; a fast GPU needs many more).
    let mut iterations = 60_000u32;
    loop {
        let mut probe = CommandList::with_total_timing(&ctx).unwrap();
        let push = spin::PushConstants { iterations };
        probe
            .dispatch(&p, &spin::BufferBindings { x: &x }, &push, [n as u32, 1, 1])
            .unwrap();
        probe.submit_and_wait().unwrap();
        let took = probe.total_time().unwrap().as_secs_f64();
        if took >= 0.3 || iterations >= 1 << 30 {
            break;
        }
        let factor = (0.4 / took.max(1e-6)).ceil().clamp(2.0, 1024.0) as u32;
        iterations = iterations.saturating_mul(factor).min(1 << 30);
    }
    let mut list = CommandList::with_total_timing(&ctx).unwrap();
    let push = spin::PushConstants { iterations };
    list.dispatch(&p, &spin::BufferBindings { x: &x }, &push, [n as u32, 1, 1])
        .unwrap();
    let out = list.download(&x.view(0, &[4]).unwrap()).unwrap();
    let slot_tensor = Tensor::new(&ctx, &[4], TensorFormat::F32).unwrap();
    let slot = list.upload_slot(&slot_tensor).unwrap();
    let mut s = list.submit().unwrap();
    let resubmit = list.submit().map(|_| ());
    let slot_write = slot.write_f32(&[1.0; 4]);
    let write = x.upload_u32(&vec![0; n]);
    let view_read = x.view(4, &[4]).unwrap().download_u32();
    let read = out.read_u32();
    let timings = list.total_time();
    // Polled after the checks: a run still pending now was pending during every one of them.
    let done_early = s.is_done().unwrap();
    if done_early {
        eprintln!("the device finished the spin before it could be checked pending");
    } else {
        assert!(matches!(resubmit.unwrap_err(), CommandError::StillPending));
        assert!(matches!(
            slot_write.unwrap_err(),
            CommandError::StillPending
        ));
        let e = write.unwrap_err();
        assert!(matches!(e, TensorError::Pending { pending: 1 }), "{e}");
        assert!(e.to_string().contains("wait for their Submission"), "{e}");
        assert!(matches!(
            view_read.unwrap_err(),
            TensorError::Pending { .. }
        ));
        assert!(matches!(read.unwrap_err(), CommandError::NotComplete));
        assert!(matches!(timings.unwrap_err(), CommandError::StillPending));
    }
    // A tensor the list doesn't use is free.
    other.upload_u32(&[1, 2, 3, 4]).unwrap();
    s.wait().unwrap();
    if done_early {
        // The checks' write went through after the run (other tests' work on the GPU slowed
        // the probe that sized the spin): run again, so x holds the run's values.
        list.submit_and_wait().unwrap();
    }
    let got = x.download_u32().unwrap();
    assert_eq!(out.read_u32().unwrap(), got[..4]);
    list.total_time().unwrap();
    x.upload_u32(&vec![0; n]).unwrap();

    // Polling until done frees the tensors too; dropping the list with a run in flight waits.
    let s = list.submit().unwrap();
    while !s.is_done().unwrap() {
        std::thread::yield_now();
    }
    assert!(x.download_u32().is_ok());
    drop(s);
    let _s = list.submit().unwrap();
    drop(list);
    assert_eq!(x.download_u32().unwrap(), got);
    assert_clean(&ctx);
}

/// Proves: an upload slot uploads what it holds at each submission (new data per run of one
/// recorded list, the inference loop), starts as zeros, refuses data of the wrong length, and
/// refuses a write while a run is in flight.
#[test]
fn upload_slots_take_new_data_per_run() {
    let ctx = ctx();
    let (_k, p) = scale_pipeline(&ctx);
    let n = 512;
    let x = Tensor::new(&ctx, &[n], TensorFormat::F32).unwrap();
    let y = Tensor::new(&ctx, &[n], TensorFormat::F32).unwrap();
    let mut list = CommandList::new(&ctx).unwrap();
    let input = list.upload_slot(&x).unwrap();
    scale_into(&mut list, &p, &x, &y, 2.0, 1.0);
    let output = list.download(&y).unwrap();
    list.submit_and_wait().unwrap();
    assert_eq!(output.read_f32().unwrap(), vec![1.0; n]);
    for step in 0..3 {
        let xs = random(n, 10 + step);
        input.write_f32(&xs).unwrap();
        let mut s = list.submit().unwrap();
        // The run may finish between a poll and the write, so a write that goes through must
        // find it done; the spin test checks the refusal where the run is surely in flight.
        match input.write_f32(&xs) {
            Err(e) => assert!(matches!(e, CommandError::StillPending), "{e}"),
            Ok(()) => assert!(s.is_done().unwrap(), "a slot took data during its run"),
        }
        s.wait().unwrap();
        assert_close(
            &output.read_f32().unwrap(),
            &affine(&xs, 2.0, 1.0),
            1e-6,
            "step",
        );
    }
    let e = input.write_f32(&[1.0]).unwrap_err();
    assert!(
        matches!(e, CommandError::Tensor(TensorError::LengthMismatch { .. })),
        "{e}"
    );
    assert_clean(&ctx);
}

/// Proves: an upload slot of a 16-bit tensor stores its data converted (the values half or
/// bfloat16 rounds them to, across more values than one conversion chunk holds, each run's
/// own), and a slot of integers refuses f32 data with nothing written.
#[test]
fn upload_slots_convert_to_the_tensor_format() {
    let ctx = ctx();
    let n = 20_001;
    for format in [TensorFormat::F16, TensorFormat::Bf16] {
        let x = Tensor::new(&ctx, &[n], format).unwrap();
        let mut list = CommandList::new(&ctx).unwrap();
        let input = list.upload_slot(&x).unwrap();
        let output = list.download(&x).unwrap();
        for step in 0..2 {
            let xs = random(n, 40 + step);
            input.write_f32(&xs).unwrap();
            list.submit_and_wait().unwrap();
            let want: Vec<f32> = match format {
                TensorFormat::F16 => xs
                    .iter()
                    .map(|&v| half::f16::from_f32(v).to_f32())
                    .collect(),
                _ => xs
                    .iter()
                    .map(|&v| half::bf16::from_f32(v).to_f32())
                    .collect(),
            };
            assert_eq!(output.read_f32().unwrap(), want, "{format:?} step {step}");
        }
    }
    let ids = Tensor::new(&ctx, &[4], TensorFormat::I32).unwrap();
    let mut list = CommandList::new(&ctx).unwrap();
    let slot = list.upload_slot(&ids).unwrap();
    let e = slot.write_f32(&[1.0; 4]).unwrap_err();
    assert!(
        matches!(e, CommandError::Tensor(TensorError::WrongFormat { .. })),
        "{e}"
    );
    assert_clean(&ctx);
}

/// Proves: `submit_and_wait` after an unwaited `submit` waits for that run first and runs
/// again; a submission outlives its list (the list's drop waited for it) and still answers.
#[test]
fn submit_and_wait_waits_for_a_pending_run_and_submissions_outlive_lists() {
    let ctx = ctx();
    let (_k, p) = scale_pipeline(&ctx);
    let xs = random(300, 7);
    let x = f32_tensor(&ctx, &xs);
    let y = Tensor::new(&ctx, &[300], TensorFormat::F32).unwrap();
    let mut list = CommandList::new(&ctx).unwrap();
    scale_into(&mut list, &p, &x, &y, 4.0, 0.0);
    let mut first = list.submit().unwrap();
    list.submit_and_wait().unwrap();
    first.wait().unwrap();
    let mut second = list.submit().unwrap();
    drop(list);
    assert!(second.is_done().unwrap());
    second.wait().unwrap();
    assert_close(
        &y.download_f32().unwrap(),
        &affine(&xs, 4.0, 0.0),
        1e-6,
        "y",
    );
    assert_clean(&ctx);
}

/// A list's scratch: a buffer given back is lent again to a request it holds (of its format),
/// one still lent or too small or of another format is not, and the list keeps what it lent.
#[test]
fn scratch_buffers_are_lent_again_once_given_back() {
    let ctx = ctx();
    let mut list = CommandList::new(&ctx).unwrap();
    let f = TensorFormat::F32;
    let a = list.scratch(&ctx, &[1000], f, &[]).unwrap();
    let b = list.scratch(&ctx, &[10], f, &[]).unwrap();
    assert_ne!(a.raw_buffer(), b.raw_buffer(), "a is still lent");
    list.release_scratch(&a);
    let c = list.scratch(&ctx, &[20, 25], f, &[]).unwrap();
    assert_eq!(
        c.raw_buffer(),
        a.raw_buffer(),
        "a's buffer holds 500 values"
    );
    assert_eq!(c.shape(), &[20, 25]);
    list.release_scratch(&c);
    let d = list.scratch(&ctx, &[2000], f, &[]).unwrap();
    assert_ne!(d.raw_buffer(), a.raw_buffer(), "too small");
    let e = list.scratch(&ctx, &[10], TensorFormat::I32, &[]).unwrap();
    assert_ne!(e.raw_buffer(), a.raw_buffer(), "another format");
    assert_eq!(list.scratch_bytes(), (1000 + 10 + 2000) * 4 + 10 * 4);
    let held = ctx.allocated_bytes();
    drop((a, b, c, d, e));
    assert_eq!(ctx.allocated_bytes(), held, "the list keeps its scratch");
    drop(list);
    assert!(ctx.allocated_bytes() < held);
    assert_clean(&ctx);
}

/// A scratch buffer that a command since the last barrier used is not lent to a command that
/// would otherwise run beside it (a new buffer, no barrier), and is lent where one of the
/// command's inputs was written since the last barrier (it waits there anyway). Two branches
/// of one input, each through a scratch buffer, run without a barrier between them and both
/// give their results.
#[test]
fn scratch_in_use_is_not_lent_to_a_command_that_would_run_beside_it() {
    let ctx = ctx();
    let (_k, p) = scale_pipeline(&ctx);
    let x = f32_tensor(&ctx, &random(256, 3));
    let (y1, y2, z) = (
        f32_tensor(&ctx, &[f32::NAN; 256]),
        f32_tensor(&ctx, &[f32::NAN; 256]),
        f32_tensor(&ctx, &[f32::NAN; 256]),
    );
    let mut list = CommandList::new(&ctx).unwrap();
    let f = TensorFormat::F32;
    // Branch 1: x → s1 → y1 (a barrier between its two passes).
    let s1 = list.scratch(&ctx, &[256], f, &[&x]).unwrap();
    scale_into(&mut list, &p, &x, &s1, 2.0, 0.0);
    scale_into(&mut list, &p, &s1, &y1, 1.0, 1.0);
    list.release_scratch(&s1);
    assert_eq!(list.barrier_count(), 1);
    // Branch 2 reads x, written before the barrier: s1's buffer (read since it) is not lent.
    let s2 = list.scratch(&ctx, &[256], f, &[&x]).unwrap();
    assert_ne!(s2.raw_buffer(), s1.raw_buffer());
    scale_into(&mut list, &p, &x, &s2, 3.0, 0.0);
    assert_eq!(
        list.barrier_count(),
        1,
        "branch 2 runs beside branch 1's second pass"
    );
    scale_into(&mut list, &p, &s2, &y2, 1.0, -1.0);
    list.release_scratch(&s2);
    // A command reading y2, written since the last barrier, waits anyway: s1 is lent again.
    let s3 = list.scratch(&ctx, &[256], f, &[&y2]).unwrap();
    assert_eq!(s3.raw_buffer(), s1.raw_buffer());
    scale_into(&mut list, &p, &y2, &s3, 0.5, 0.0);
    scale_into(&mut list, &p, &s3, &z, 1.0, 0.0);
    list.release_scratch(&s3);
    assert_eq!(list.scratch_bytes(), 2 * 256 * 4);
    list.submit_and_wait().unwrap();
    let xs = x.download_f32().unwrap();
    let want_y2 = affine(&affine(&xs, 3.0, 0.0), 1.0, -1.0);
    assert_close(
        &y1.download_f32().unwrap(),
        &affine(&affine(&xs, 2.0, 0.0), 1.0, 1.0),
        1e-6,
        "y1",
    );
    assert_close(&y2.download_f32().unwrap(), &want_y2, 1e-6, "y2");
    assert_close(
        &z.download_f32().unwrap(),
        &affine(&want_y2, 0.5, 0.0),
        1e-6,
        "z",
    );
    assert_clean(&ctx);
}
