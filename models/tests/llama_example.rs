//! The `llama` example run as the README gives it, on whatever device there is (lavapipe in
//! CI): the small decoder's greedy tokens in F32 equal to the CPU reference's (the example
//! fails otherwise), in F16 and with int8 weights, random weights saved and loaded back; bad
//! command lines refused by name.

#[allow(dead_code)]
#[path = "../examples/llama/main.rs"]
mod example;

use std::error::Error;

fn run(args: &[&str]) -> Result<(), Box<dyn Error>> {
    let args = example::parse_args(args.iter().map(|a| a.to_string()))?;
    example::run(args)
}

#[test]
fn the_readme_commands_run() {
    run(&[]).unwrap();
    run(&["--format", "f16", "--tokens", "16"]).unwrap();
    run(&["--int8-weights", "--tokens", "4"]).unwrap();
    let saved = std::env::temp_dir().join(format!("vkprism-example-{}.st", std::process::id()));
    let path = saved.to_str().unwrap();
    run(&["--save", path, "--tokens", "2"]).unwrap();
    run(&["--weights", path, "--tokens", "2"]).unwrap();
    std::fs::remove_file(&saved).unwrap();
}

#[test]
fn bad_command_lines_are_refused_by_name() {
    for (args, needle) in [
        (&["--config", "huge"][..], "unknown config huge"),
        (&["--frobnicate", "1"], "unknown flag --frobnicate"),
        (&["--tokens"], "--tokens needs a value"),
        (&["--tokens", "many"], "--tokens many"),
        (&["--format", "f8"], "unknown format f8"),
        (&["--chat", "hi"], "--chat needs --model DIR"),
        (&["--text", "hi"], "need a tokenizer"),
        (&["--model", "/nonexistent/model"], "config.json"),
    ] {
        let err = run(args).unwrap_err().to_string();
        assert!(err.contains(needle), "{args:?}: `{needle}` not in {err}");
    }
}
