//! The llama example's chat prompts (`examples/llama/chat.rs`): a model directory's chat
//! template (its `chat_template.jinja` first, then `tokenizer_config.json`'s `chat_template`,
//! a string or a list of named templates) rendered with the messages, the assistant's turn
//! opened and the special tokens the configuration names; Python string methods in the
//! template; `strftime_now` dating a system message as Llama 3.x templates do;
//! `raise_exception`, a bad date format and a directory without a template refused by name.

#[path = "../examples/llama/chat.rs"]
mod chat;

use chat::ChatTemplate;
use std::path::{Path, PathBuf};

/// A template of the common form: each message after a role tag, ended by the end token; the
/// assistant's tag opening its turn. A role other than system or user is refused.
const TEMPLATE: &str = "{{ bos_token }}{% for m in messages %}\
{% if m['role'] not in ['system', 'user'] %}{{ raise_exception('no ' + m['role']) }}{% endif %}\
<|{{ m['role'] }}|>\n{{ m['content'].strip() }}{{ eos_token }}\n{% endfor %}\
{% if add_generation_prompt %}<|assistant|>\n{% endif %}";

/// A fresh directory holding `config` as `tokenizer_config.json` (and `jinja` as
/// `chat_template.jinja`).
fn model_dir(what: &str, config: serde_json::Value, jinja: Option<&str>) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("vkprism-chat-{what}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("tokenizer_config.json"), config.to_string()).unwrap();
    if let Some(source) = jinja {
        std::fs::write(dir.join("chat_template.jinja"), source).unwrap();
    }
    dir
}

fn render(dir: &Path, system: Option<&str>, user: &str) -> String {
    let out = ChatTemplate::open(dir)
        .unwrap()
        .render(system, user)
        .unwrap();
    std::fs::remove_dir_all(dir).unwrap();
    out
}

#[test]
fn templates_render_the_messages_as_the_model_was_trained_on() {
    // The special tokens as plain strings and as added tokens' objects.
    let config = serde_json::json!({
        "chat_template": TEMPLATE,
        "bos_token": "<s>",
        "eos_token": {"content": "</s>", "special": true},
    });
    let dir = model_dir("string", config, None);
    assert_eq!(
        render(&dir, Some("Be brief."), "  Hello there \n"),
        "<s><|system|>\nBe brief.</s>\n<|user|>\nHello there</s>\n<|assistant|>\n"
    );
    // A list of named templates: the one named default.
    let config = serde_json::json!({
        "chat_template": [
            {"name": "tool_use", "template": "tools"},
            {"name": "default", "template": TEMPLATE},
        ],
        "eos_token": "<|end|>",
    });
    let dir = model_dir("list", config, None);
    assert_eq!(
        render(&dir, None, "Hi"),
        "<|user|>\nHi<|end|>\n<|assistant|>\n"
    );
    // chat_template.jinja before the configuration's.
    let config = serde_json::json!({"chat_template": "unused", "eos_token": "</s>"});
    let dir = model_dir(
        "jinja",
        config,
        Some("[{{ messages[0]['content'] }}]{{ eos_token }}"),
    );
    assert_eq!(render(&dir, None, "Hi"), "[Hi]</s>");
}

#[test]
fn a_missing_or_failing_template_is_refused_by_name() {
    let dir = model_dir("none", serde_json::json!({"eos_token": "</s>"}), None);
    let err = ChatTemplate::open(&dir).err().unwrap().to_string();
    assert!(
        err.contains("chat_template.jinja") && err.contains("tokenizer_config.json"),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
    let raising = "{{ raise_exception('system messages are not supported') }}";
    let dir = model_dir("raise", serde_json::json!({"chat_template": raising}), None);
    let err = ChatTemplate::open(&dir)
        .unwrap()
        .render(None, "Hi")
        .err()
        .unwrap();
    assert!(
        err.to_string()
            .contains("system messages are not supported"),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
    let dir = model_dir(
        "broken",
        serde_json::json!({"chat_template": "{% for %}"}),
        None,
    );
    let err = ChatTemplate::open(&dir)
        .unwrap()
        .render(None, "Hi")
        .err()
        .unwrap();
    assert!(err.to_string().contains("chat template"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A template in Llama 3.x's manner: the system message dated by `strftime_now` where the
/// renderer defines it (a fixed date otherwise), the header tokens around each role; a format
/// chrono does not know refused by name.
#[test]
fn strftime_now_dates_the_system_message() {
    let template = "{{ bos_token }}{% if strftime_now is defined %}\
{% set date_string = strftime_now('%d %b %Y') %}{% else %}{% set date_string = '1 Jan 2000' %}\
{% endif %}<|start_header_id|>system<|end_header_id|>\n\nToday Date: {{ date_string }}\
<|eot_id|>{% for m in messages %}<|start_header_id|>{{ m['role'] }}<|end_header_id|>\n\n\
{{ m['content'] | trim }}<|eot_id|>{% endfor %}\
{% if add_generation_prompt %}<|start_header_id|>assistant<|end_header_id|>\n\n{% endif %}";
    let config = serde_json::json!({"bos_token": "<|begin_of_text|>"});
    let dir = model_dir("llama3", config.clone(), Some(template));
    let before = chrono::Local::now().format("%d %b %Y").to_string();
    let out = render(&dir, None, "Hi ");
    let after = chrono::Local::now().format("%d %b %Y").to_string();
    let dated = [before, after]
        .iter()
        .any(|d| out.contains(&format!("Today Date: {d}<|eot_id|>")));
    assert!(dated, "{out}");
    assert!(
        out.starts_with("<|begin_of_text|><|start_header_id|>system"),
        "{out}"
    );
    assert!(
        out.ends_with("user<|end_header_id|>\n\nHi<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"),
        "{out}"
    );
    let bad = "{{ strftime_now('%Q') }}";
    let dir = model_dir("llama3-bad", config, Some(bad));
    let err = ChatTemplate::open(&dir)
        .unwrap()
        .render(None, "Hi")
        .unwrap_err();
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(err.to_string().contains("strftime_now"), "{err}");
}

/// A template in Qwen3's manner, with the constructs its own uses: a namespace whose
/// attributes a loop sets, the messages walked backwards by slicing with `loop.index0`, Python's
/// `startswith` / `endswith` / `split` / `lstrip`, `is string`, an `enable_thinking` left
/// undefined by the renderer, an undefined `tools` read as false (the last query found by the
/// backward walk printed at the end).
#[test]
fn qwen3_style_templates_render() {
    let template = r#"{%- if tools %}{{ raise_exception('no tools') }}{%- endif %}
{%- set ns = namespace(multi_step=true, last_query=-1) %}
{%- for m in messages[::-1] %}{%- set index = (messages|length - 1) - loop.index0 %}
{%- if ns.multi_step and m.role == 'user' and not (m.content.startswith('<r>') and m.content.endswith('</r>')) %}
{%- set ns.multi_step = false %}{%- set ns.last_query = index %}{%- endif %}{%- endfor %}
{%- for m in messages %}{%- if m.content is string %}
{{- '<|im_start|>' + m.role + '\n' + m.content.split('</think>')[-1].lstrip('\n') + '<|im_end|>\n' }}
{%- endif %}{%- endfor %}
{%- if add_generation_prompt %}{{- '<|im_start|>assistant\n' }}
{%- if enable_thinking is defined and enable_thinking is false %}{{- '<think>\n\n</think>\n\n' }}{%- endif %}
{%- endif %}{{- '[' + ns.last_query|string + ']' }}"#;
    let config = serde_json::json!({"eos_token": "<|im_end|>"});
    let dir = model_dir("qwen3", config, Some(template));
    assert_eq!(
        render(&dir, Some("Be brief."), "<think>x</think>\nHi"),
        "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n\
         <|im_start|>assistant\n[1]"
    );
}
