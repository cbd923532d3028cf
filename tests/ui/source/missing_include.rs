vkprism::compute_shader! {
    pub mod k,
    src: r#"
#version 450
#include "not_there.glsl"
void main() {}
"#,
}

fn main() {}
