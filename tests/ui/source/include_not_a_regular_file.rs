vkprism::compute_shader! {
    pub mod k,
    src: r#"
#version 450
#include "/dev/zero"
void main() {}
"#,
}

fn main() {}
