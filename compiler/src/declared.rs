//! What the kernel text declares of its interface, read from the text alone (no preprocessor, no
//! compiler): the push-constant block's members and the specialization constants, with their
//! types where they are GLSL's own. Only for a kernel that failed (`codegen::fallback`): its
//! stubs keep these fields, so code that uses them type-checks and the kernel's real errors are
//! the only ones. A kernel that compiled gets everything from SPIR-V reflection, never from here.

/// One member or constant: its name and its Rust type (as codegen writes it), `None` when the
/// GLSL type is not one this reading knows (an extended type, a struct, a macro).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Field {
    /// The GLSL name.
    pub name: String,
    /// The Rust type: `f32`, `[i32; 4]`, `[[f32; 4]; 2]`.
    pub ty: Option<String>,
}

/// The push-constant members and the specialization constants the text declares.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Declared {
    /// Members of the `layout (push_constant)` block, `None` when there is none.
    pub push: Option<Vec<Field>>,
    /// `layout (constant_id = N) const T name = …;`, in order (the workgroup size's excluded).
    pub spec: Vec<Field>,
}

impl Declared {
    /// Reads `text` (the kernel and its includes): comments and preprocessor directives are
    /// skipped, every `#if` branch is read (a name declared twice counts once).
    pub fn of(text: &str) -> Declared {
        let mut toks: Vec<&str> = Vec::new();
        let lines = crate::budget::logical_lines(text);
        for l in &lines {
            if l.text.trim_start().starts_with('#') {
                continue;
            }
            toks.extend(crate::budget::line_tokens(&l.text));
        }
        let mut out = Declared::default();
        let mut i = 0;
        while i < toks.len() {
            if toks[i] != "layout" || toks.get(i + 1) != Some(&"(") {
                i += 1;
                continue;
            }
            let Some(close) = toks[i..].iter().position(|t| *t == ")").map(|p| i + p) else {
                break;
            };
            let qualifiers = &toks[i + 2..close];
            i = close + 1;
            if qualifiers.contains(&"push_constant") && out.push.is_none() {
                // `uniform NAME { members } instance;`
                let Some(open) = toks[i..]
                    .iter()
                    .take(8)
                    .position(|t| *t == "{")
                    .map(|p| i + p)
                else {
                    continue;
                };
                let end = toks[open..]
                    .iter()
                    .position(|t| *t == "}")
                    .map_or(toks.len(), |p| open + p);
                out.push = Some(members(&toks[open + 1..end]));
                i = end;
            } else if qualifiers.contains(&"constant_id") {
                // `const T name = …;`
                let end = toks[i..]
                    .iter()
                    .position(|t| *t == ";")
                    .map_or(toks.len(), |p| i + p);
                let decl = &toks[i..end];
                let decl = decl.strip_prefix(&["const"][..]).unwrap_or(decl);
                let decl: Vec<&str> = decl.iter().copied().filter(|t| !is_precision(t)).collect();
                if let [ty, name, "=", ..] = decl.as_slice() {
                    if is_name(name) && !out.spec.iter().any(|f| f.name == *name) {
                        out.spec.push(Field {
                            name: name.to_string(),
                            ty: spec_type(ty).map(str::to_string),
                        });
                    }
                }
                i = end;
            }
        }
        out
    }
}

/// The members of a block body: `T a; T b[4], c;`.
fn members(body: &[&str]) -> Vec<Field> {
    let mut out: Vec<Field> = Vec::new();
    for decl in body.split(|t| *t == ";") {
        let decl: Vec<&str> = decl.iter().copied().filter(|t| !is_precision(t)).collect();
        let Some((ty, rest)) = decl.split_first() else {
            continue;
        };
        let element = glsl_type(ty);
        for declarator in rest.split(|t| *t == ",") {
            let Some((name, dims)) = declarator.split_first() else {
                continue;
            };
            if !is_name(name) || out.iter().any(|f| f.name == *name) {
                continue;
            }
            let mut ty = element.map(str::to_string);
            // `[N]` dimensions, innermost last; a length that is not a number is unknown.
            for dim in dims.chunks(3).rev() {
                ty = match (ty, dim) {
                    (Some(t), ["[", n, "]"]) => n
                        .trim_end_matches(['u', 'U'])
                        .parse::<u32>()
                        .ok()
                        .map(|n| format!("[{t}; {n}]")),
                    _ => None,
                };
            }
            out.push(Field {
                name: name.to_string(),
                ty,
            });
        }
    }
    out
}

fn is_precision(t: &str) -> bool {
    matches!(t, "highp" | "mediump" | "lowp" | "const")
}

fn is_name(t: &str) -> bool {
    t.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
}

/// A push-constant member's Rust type, as `codegen::push` writes it for the reflected type.
fn glsl_type(ty: &str) -> Option<&'static str> {
    Some(match ty {
        "float" => "f32",
        "int" => "i32",
        "uint" | "bool" => "u32",
        "double" => "f64",
        "int64_t" => "i64",
        "uint64_t" => "u64",
        "int16_t" => "i16",
        "uint16_t" | "float16_t" => "u16",
        "int8_t" => "i8",
        "uint8_t" => "u8",
        "vec2" => "[f32; 2]",
        "vec3" => "[f32; 3]",
        "vec4" => "[f32; 4]",
        "ivec2" => "[i32; 2]",
        "ivec3" => "[i32; 3]",
        "ivec4" => "[i32; 4]",
        "uvec2" | "bvec2" => "[u32; 2]",
        "uvec3" | "bvec3" => "[u32; 3]",
        "uvec4" | "bvec4" => "[u32; 4]",
        _ => return None,
    })
}

/// A specialization constant's Rust type, as `codegen::spec` writes it.
fn spec_type(ty: &str) -> Option<&'static str> {
    Some(match ty {
        "float" => "f32",
        "int" => "i32",
        "bool" => "bool",
        "uint" => "u32",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(name: &str, ty: Option<&str>) -> Field {
        Field {
            name: name.into(),
            ty: ty.map(String::from),
        }
    }

    #[test]
    fn push_block_and_constants_are_read_from_the_text() {
        let text = "#version 450\n\
            layout (constant_id = 0) const int M = 1;\n\
            layout (constant_id = 1) const float alpha = 1.0; // a comment\n\
            #if 0\nlayout (constant_id = 2) const bool fast = false;\n#endif\n\
            layout (constant_id = 3) const afp odd = afp(1);\n\
            layout (local_size_x_id = 233) in;\n\
            layout (push_constant) uniform parameter {\n  int w; highp float s[4];\n  uvec2 a, b[N];\n  /* } */ vec4 v;\n  sfp x;\n} p;\n\
            layout (binding = 0) buffer b { float d[]; };\n";
        let d = Declared::of(text);
        assert_eq!(
            d.spec,
            [
                field("M", Some("i32")),
                field("alpha", Some("f32")),
                field("fast", Some("bool")),
                field("odd", None),
            ]
        );
        assert_eq!(
            d.push.unwrap(),
            [
                field("w", Some("i32")),
                field("s", Some("[f32; 4]")),
                field("a", Some("[u32; 2]")),
                field("b", None),
                field("v", Some("[f32; 4]")),
                field("x", None),
            ]
        );
    }

    #[test]
    fn no_block_no_push() {
        assert_eq!(Declared::of("void main() {}"), Declared::default());
    }
}
