//! One shape as the cost file and the cost models see it: its text, which is what
//! `json.dumps(shape, separators=(",", ":"))` writes for the value `yaml.safe_load` builds, and
//! the numbers in it. Both are read off pyyaml's PyYAML-faithful node graph, so a shape's text
//! here is the text Python gives it, with no second YAML reader that could disagree.
//!
//! A shape JSON cannot hold (a date, bytes, a set; see [`pyyaml::to_json`]) has no text (`None`):
//! a cost file cannot name it. NaN and the infinities are written as Python writes them (`NaN`,
//! `Infinity`, `-Infinity`): inside a cost file they sit in a key, which is a JSON string, so the
//! file stays valid JSON.
//!
//! The text keeps json's other defaults: `ensure_ascii`, dict keys in order (merge keys
//! applied), int, float, bool and None keys as json writes them (`"1"`, `"1.5"`, `"true"`,
//! `"null"`), `!!omap` and `!!pairs` as lists of `[key, value]`; YAML 1.1 as `safe_load` has it
//! (`1e16` the string `"1e16"`, `017` the int 15, `1:30` the int 90).

use pyyaml::{construct_float, construct_int, tag, Kind, NodeId, Schema};

/// The shape's text, the key a cost file gives it: `json.dumps(shape, separators=(",", ":"))`,
/// or `None` where that raises.
pub fn text(schema: &mut Schema<'_>, id: NodeId) -> Option<String> {
    pyyaml::to_json(schema, id)
}

/// The product of the absolute values of the finite ints and floats in the shape (bools are
/// not numbers here), nested lists and dict values included; 1 for a shape without numbers.
pub fn product(schema: &mut Schema<'_>, id: NodeId) -> f64 {
    let mut p = 1.0;
    let mut todo = vec![id];
    while let Some(id) = todo.pop() {
        let node = &schema.doc.nodes[id];
        match &node.kind {
            Kind::Scalar(v) => {
                let n = match node.tag.as_str() {
                    tag::INT => construct_int(v).and_then(|n| n.to_f64()),
                    tag::FLOAT => construct_float(v),
                    _ => None,
                };
                if let Some(n) = n.filter(|n| n.is_finite()) {
                    p *= n.abs();
                }
            }
            Kind::Seq(items) => todo.extend(items.iter().copied()),
            Kind::Map(pairs) => {
                if node.tag == tag::MAP {
                    if let Ok(dict) = schema.dict(id) {
                        todo.extend(dict.iter().map(|&(_, _, v)| v));
                    }
                } else {
                    todo.extend(pairs.iter().map(|&(_, v)| v));
                }
            }
        }
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_product_multiplies_every_number_in_the_shape() {
        let yaml = "op:\n  shapes:\n    - [2, 3, [4, -5], {a: 0.5, b: true}]\n    - [dtype]\n";
        let doc = crate::shape_file::load(yaml.as_bytes(), "t").expect("PyYAML reads it");
        let mut schema = Schema::new(&doc, "t");
        let Kind::Map(top) = &doc.nodes[doc.root].kind else {
            panic!()
        };
        let Kind::Map(entry) = &doc.nodes[top[0].1].kind else {
            panic!()
        };
        let Kind::Seq(items) = &doc.nodes[entry[0].1].kind else {
            panic!()
        };
        let items = items.clone();
        assert_eq!(product(&mut schema, items[0]), 60.0);
        assert_eq!(product(&mut schema, items[1]), 1.0);
    }
}
