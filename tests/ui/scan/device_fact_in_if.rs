// The subgroup size is a specialization constant the runtime fills when it creates the pipeline
// (not a variant axis: a pipeline may ask for another): the preprocessor can't see it, so `#if`
// on it is an error that shows the expression to write.
vkprism::compute_shader! {
    pub mod k,
    src: r#"
#version 450
layout (binding = 0) buffer a_blob { float a[]; };
void main() {
#if ncnn_subgroupSize == 32
    a[0] = 1.0;
#endif
}
"#,
}

fn main() {}
