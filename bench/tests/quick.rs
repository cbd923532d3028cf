//! The harness itself on whatever device the tests run on (lavapipe in CI): every case in
//! `--quick` mode runs, checks its results and writes well-formed records.

use std::process::Command;

#[test]
fn quick_run_writes_one_record_per_figure() {
    let json = std::env::temp_dir().join(format!("vkprism-bench-{}.json", std::process::id()));
    let out = Command::new(env!("CARGO_BIN_EXE_vkprism-bench"))
        .args(["--quick", "--json"])
        .arg(&json)
        .output()
        .expect("run vkprism-bench");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let records: Vec<serde_json::Value> =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    std::fs::remove_file(&json).ok();
    for case in [
        "dispatch",
        "elementwise",
        "gemm",
        "conv2d",
        "transfer",
        "decoder",
        "resnet50",
    ] {
        assert!(
            records.iter().any(|r| r["case"] == case),
            "no {case} record:\n{stdout}"
        );
    }
    // The texture-path GEMM runs beside the buffer one (fp32 images exist on every device).
    assert!(
        records
            .iter()
            .any(|r| r["case"] == "gemm" && r["variant"] == "fp32_image"),
        "no image GEMM record:\n{stdout}"
    );
    for r in &records {
        assert!(r["value"].as_f64().is_some_and(|v| v > 0.0), "{r}");
        for key in ["shape", "variant", "coopmat", "unit", "sm_clock_mhz"] {
            assert!(r.get(key).is_some(), "{key} missing in {r}");
        }
    }
}

#[test]
fn unknown_arguments_are_refused() {
    let out = Command::new(env!("CARGO_BIN_EXE_vkprism-bench"))
        .arg("--fast")
        .output()
        .expect("run vkprism-bench");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown argument `--fast`"));
}

#[test]
fn autotune_prints_the_tuned_configuration_beside_each_figure() {
    let cache = std::env::temp_dir().join(format!("vkprism-bench-{}.tuning", std::process::id()));
    let run = || {
        let out = Command::new(env!("CARGO_BIN_EXE_vkprism-bench"))
            .args(["--quick", "--cases", "gemm,conv2d"])
            .env("VKPRISM_BENCH_AUTOTUNE", "1")
            .env("VKPRISM_BENCH_TUNE_CACHE", &cache)
            .env("VKPRISM_BENCH_VARIANTS", "fp32_lm_nocm")
            .output()
            .expect("run vkprism-bench");
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        stdout
    };
    let _ = std::fs::remove_file(&cache);
    let first = run();
    for figure in [
        "gemm 256x128x192 fp32_lm_nocm",
        "conv2d b1 6x6 8->8 3x3 fp32_lm_nocm",
    ] {
        assert!(first.contains(&format!("#   {figure}: tuned ")), "{first}");
    }
    // The second run reads the choices back from the file.
    let second = run();
    std::fs::remove_file(&cache).ok();
    assert!(second.contains("cache Loaded(2)"), "{second}");
    assert!(
        second.contains("#   gemm 256x128x192 fp32_lm_nocm: cached "),
        "{second}"
    );
}
