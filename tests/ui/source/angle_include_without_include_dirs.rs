vkprism::compute_shader! {
    pub mod k,
    src: r#"
#version 450
#include <include/axes.glsl>
void main() {}
"#,
}

fn main() {}
