vkprism::compute_shader! {
    pub mod k,
    src: r#"
/*
#version 450
*/
#version 130
void main() {}
"#,
}

fn main() {}
