vkprism::compute_shader! {
    pub mod k,
    src: r#"
#version 450
layout (binding = 0) buffer b { float d[]; };
"#,
}

fn main() {}
