//! Reading the OpenAPI document: resolving `$ref`s, validating against its schemas (those
//! of answers closed to undocumented members), and deriving values from what a schema
//! states: an example, its extremes, and values that break one constraint, each with
//! the reason it was tried.

use std::collections::HashMap;

use axum::http::Method;
use serde_json::{Value, json};

/// The served document, and validators for its schemas.
pub(super) struct Doc {
    pub(super) root: Value,
    /// The components with every object schema closed to undocumented members (see
    /// [`closed`]), for answers.
    closed: Value,
    validators: std::cell::RefCell<HashMap<(String, bool), std::rc::Rc<jsonschema::Validator>>>,
}

impl Doc {
    pub(super) fn new(root: Value) -> Doc {
        let closed = closed(&root["components"]);
        Doc { root, closed, validators: Default::default() }
    }

    /// `value`, or what its `$ref` points to in the document.
    pub(super) fn resolve<'a>(&'a self, value: &'a Value) -> &'a Value {
        match value["$ref"].as_str() {
            Some(pointer) => self.resolve(self.root.pointer(pointer.trim_start_matches('#')).unwrap()),
            None => value,
        }
    }

    /// A validator of `schema` with the document's `$ref`s; `answer`: closed schemas.
    pub(super) fn validator(&self, schema: &Value, answer: bool) -> std::rc::Rc<jsonschema::Validator> {
        let key = (schema.to_string(), answer);
        if let Some(v) = self.validators.borrow().get(&key) {
            return v.clone();
        }
        let components = if answer { &self.closed } else { &self.root["components"] };
        let wrapped = json!({"$schema": "https://json-schema.org/draft/2020-12/schema",
                             "components": components, "allOf": [schema]});
        let validator = jsonschema::draft202012::options()
            .should_validate_formats(true)
            .build(&wrapped)
            .unwrap_or_else(|e| panic!("the document's schema {schema} does not compile: {e}"));
        let validator = std::rc::Rc::new(validator);
        self.validators.borrow_mut().insert(key, validator.clone());
        validator
    }

    pub(super) fn valid(&self, schema: &Value, value: &Value) -> bool {
        self.validator(schema, false).is_valid(value)
    }

    /// Every operation: (path, method, operation).
    pub(super) fn operations(&self) -> Vec<(String, Method, Value)> {
        let mut all = Vec::new();
        for (path, item) in self.root["paths"].as_object().unwrap() {
            for (method, operation) in item.as_object().unwrap() {
                let method = Method::from_bytes(method.to_uppercase().as_bytes()).unwrap();
                all.push((path.clone(), method, operation.clone()));
            }
        }
        all
    }
}

/// `components` with `unevaluatedProperties: false` on every object schema not used
/// inside an `allOf` (there the whole, not the part, lists the members).
fn closed(components: &Value) -> Value {
    let mut closed = components.clone();
    let text = components.to_string();
    let schemas = closed["schemas"].as_object_mut().unwrap();
    for (name, schema) in schemas.iter_mut() {
        let in_all_of = text.contains(&format!("\"allOf\":[{{\"$ref\":\"#/components/schemas/{name}\"}}"));
        let is_object = schema.get("properties").is_some() || schema.get("allOf").is_some();
        if is_object && !in_all_of && schema.get("additionalProperties").is_none() {
            schema["unevaluatedProperties"] = json!(false);
        }
    }
    closed
}

/// A value the schema takes: its first example, const or enum value, or one built from
/// its parts.
pub(super) fn example_of(doc: &Doc, schema: &Value) -> Value {
    let schema = doc.resolve(schema);
    if let Some(example) = schema["examples"].get(0).or(schema.get("example")).or(schema.get("const")) {
        return example.clone();
    }
    if let Some(first) = schema["enum"].get(0) {
        return first.clone();
    }
    for combined in ["anyOf", "oneOf"] {
        if let Some(branches) = schema[combined].as_array() {
            let branch = branches.iter().find(|b| b["type"] != "null").unwrap_or(&branches[0]);
            return example_of(doc, branch);
        }
    }
    let mut object = match schema["allOf"].get(0) {
        Some(part) => example_of(doc, part),
        None => match schema["type"].as_str() {
            Some("string") => return json!("x"),
            Some("integer" | "number") => return schema.get("minimum").cloned().unwrap_or(json!(0)),
            Some("boolean") => return json!(false),
            Some("array") => return json!([]),
            Some("null") => return Value::Null,
            _ if schema.get("properties").is_none() => return json!({}),
            _ => json!({}),
        },
    };
    for name in schema["required"].as_array().into_iter().flatten() {
        let name = name.as_str().unwrap();
        if object.get(name).is_none() {
            object[name] = example_of(doc, &schema["properties"][name]);
        }
    }
    object
}

/// The properties a schema lists, through `$ref`, `allOf` and nullable wrappers.
fn properties(doc: &Doc, schema: &Value) -> Vec<(String, Value)> {
    let schema = doc.resolve(schema);
    let mut found: Vec<(String, Value)> =
        schema["properties"].as_object().into_iter().flatten().map(|(k, v)| (k.clone(), v.clone())).collect();
    for key in ["allOf", "anyOf", "oneOf"] {
        for part in schema[key].as_array().into_iter().flatten() {
            for (name, sub) in properties(doc, part) {
                if !found.iter().any(|(n, _)| *n == name) {
                    found.push((name, sub));
                }
            }
        }
    }
    found
}

/// The bounds a schema states, through `$ref` and combinations: minimum, maximum,
/// maxLength, maxItems, and whether it has a pattern, an enum or const, items or a format.
fn bounds(doc: &Doc, schema: &Value, out: &mut Vec<(String, Value)>) {
    let schema = doc.resolve(schema);
    for key in ["minimum", "maximum", "maxLength", "maxItems", "pattern", "enum", "const", "items", "format"] {
        if let Some(v) = schema.get(key) {
            out.push((key.to_owned(), v.clone()));
        }
    }
    for key in ["allOf", "anyOf", "oneOf"] {
        for part in schema[key].as_array().into_iter().flatten() {
            bounds(doc, part, out);
        }
    }
}

/// Why a value was tried: the kind of constraint it oversteps (a candidate) or the
/// kind of boundary it stands at (an extreme). The tests check that each kind was tried.
pub(super) type Reason = &'static str;

/// A number, and the same number written as text and as milliseconds (`"61000ms"`):
/// where the document takes a number as text too (a duration, epoch milliseconds), the
/// text must follow the same bounds.
fn as_number_and_text(n: f64, reason: Reason) -> Vec<(Value, Reason)> {
    let number = if n.fract() == 0.0 && (0.0..1.8e19).contains(&n) { json!(n as u64) } else { json!(n) };
    let mut tried = vec![(number.clone(), reason)];
    if number.is_u64() {
        tried.push((json!(number.to_string()), "bound as text"));
        tried.push((json!(format!("{number}ms")), "bound as text"));
    }
    tried
}

/// Values to try against a schema: wrong types, null, and each stated bound overstepped.
pub(super) fn candidates(doc: &Doc, schema: &Value, current: &Value) -> Vec<(Value, Reason)> {
    let mut tried = vec![
        (json!(true), "type"),
        (json!("not valid!"), "type"),
        (json!(-1), "type"),
        (json!(0), "type"),
        (json!(2.5), "type"),
        (json!({}), "type"),
        (json!([]), "type"),
        (json!(""), "empty"),
        (json!("a\u{1}b"), "control character"),
        (Value::Null, "null"),
    ];
    let mut found = Vec::new();
    bounds(doc, schema, &mut found);
    for (key, bound) in found {
        match key.as_str() {
            "minimum" => tried.extend(as_number_and_text(bound.as_f64().unwrap() - 1.0, "minimum")),
            "maximum" => tried.extend(as_number_and_text(bound.as_f64().unwrap() + 1.0, "maximum")),
            "maxLength" => tried.push((json!("x".repeat(bound.as_u64().unwrap() as usize + 1)), "maxLength")),
            "maxItems" => {
                let item = current.get(0).cloned().unwrap_or(json!("x"));
                tried.push((Value::Array(vec![item; bound.as_u64().unwrap() as usize + 1]), "maxItems"));
            }
            "enum" => tried.push((json!("not-one-of-them"), "enum")),
            "items" => tried.push((json!([true]), "item type")),
            "format" if bound == "date-time" => {
                tried.push((json!("2026-02-30T00:00:00Z"), "date-time"));
                tried.push((json!("9999-12-31T23:59:59Z"), "date-time"));
            }
            _ => {}
        }
    }
    tried
}

/// Values at the edges of what a schema states, for the document to judge (those it
/// takes must be taken): its least and greatest values and the ones just beyond, also
/// as text; null; each value of an enum; the earliest and latest times and one after.
pub(super) fn extremes(doc: &Doc, schema: &Value) -> Vec<(Value, Reason)> {
    let mut found = Vec::new();
    bounds(doc, schema, &mut found);
    let mut edges: Vec<(Value, Reason)> = found
        .into_iter()
        .flat_map(|(key, bound)| match key.as_str() {
            "minimum" => [0.0, -1.0].map(|d| as_number_and_text(bound.as_f64().unwrap() + d, "minimum")).concat(),
            "maximum" => [0.0, 1.0].map(|d| as_number_and_text(bound.as_f64().unwrap() + d, "maximum")).concat(),
            "enum" => bound.as_array().unwrap().iter().map(|v| (v.clone(), "enum value")).collect(),
            "const" => vec![(bound, "enum value")],
            "format" if bound == "date-time" => vec![
                // Before 1970, like any time in the past: now.
                (json!("0001-01-01T00:00:00Z"), "date-time"),
                (json!("1969-12-31T23:59:59.999Z"), "date-time"),
                (json!("9999-12-28T23:59:59.999999999-23:59"), "date-time"),
                (json!("9999-12-31T23:59:59Z"), "date-time"),
            ],
            _ => Vec::new(),
        })
        .collect();
    edges.push((Value::Null, "null"));
    edges
}

/// Fields whose bounds the schema states but whose valid values also depend on the
/// rest of the task (the description says so): not tried at their extremes. (A
/// `cron_syntax` decides which `cron` texts are valid.)
const DEPENDENT: &[&str] = &["/repeat/until", "/backoff/max", "/repeat/cron_syntax"];

/// Bodies derived from `base`, each changing one field at `at` (a path of keys and
/// indexes into `base`) or below: with `valid`, to an extreme the document allows,
/// kept when the whole body is still valid; otherwise breaking one constraint (a wrong
/// type, a bound overstepped, a required field removed, an unknown one added), kept
/// only when the document's schema of the whole body refuses it.
pub(super) fn variants(
    doc: &Doc,
    whole: &Value,
    base: &Value,
    at: &[Value],
    schema: &Value,
    valid: bool,
    out: &mut Vec<(Value, Reason)>,
) {
    let here = pointer_of(at);
    let current = base.pointer(&here).cloned().unwrap_or(Value::Null);
    let push = |body: Value, reason: Reason, out: &mut Vec<(Value, Reason)>| {
        if doc.valid(whole, &body) == valid && !out.iter().any(|(b, _)| *b == body) && body != *base {
            out.push((body, reason));
        }
    };
    if at.is_empty() && !valid {
        push(json!([]), "type", out);
    }
    if !current.is_object() {
        return;
    }
    if !valid {
        let mut extra = base.clone();
        extra.pointer_mut(&here).unwrap()["unexpected_field"] = json!(1);
        push(extra, "unknown field", out);
    }
    for (name, sub) in properties(doc, schema) {
        let mut path = at.to_vec();
        path.push(json!(name));
        if current.get(&name).is_some() && !valid {
            let mut removed = base.clone();
            removed.pointer_mut(&here).unwrap().as_object_mut().unwrap().remove(&name);
            push(removed, "required", out);
        }
        let tried = match valid {
            true if DEPENDENT.iter().any(|d| pointer_of(&path).ends_with(d)) => Vec::new(),
            true => extremes(doc, &sub),
            false => candidates(doc, &sub, current.get(&name).unwrap_or(&Value::Null)),
        };
        for (value, reason) in tried {
            let mut changed = base.clone();
            changed.pointer_mut(&here).unwrap()[&name] = value;
            push(changed, reason, out);
        }
        let inner = current.get(&name).unwrap_or(&Value::Null);
        if inner.is_object() {
            variants(doc, whole, base, &path, &non_null(doc, &sub), valid, out);
        } else if inner.get(0).is_some_and(Value::is_object) {
            path.push(json!(0));
            variants(doc, whole, base, &path, &doc.resolve(&non_null(doc, &sub))["items"].clone(), valid, out);
        }
    }
}

/// The non-null branch of a nullable schema.
fn non_null(doc: &Doc, schema: &Value) -> Value {
    let schema = doc.resolve(schema);
    match schema["anyOf"].as_array() {
        Some(branches) => branches.iter().find(|b| b["type"] != "null").cloned().unwrap_or(schema.clone()),
        None => schema.clone(),
    }
}

fn pointer_of(path: &[Value]) -> String {
    path.iter().map(|p| format!("/{}", p.as_str().map_or_else(|| p.to_string(), str::to_owned))).collect()
}
