use serde_json::{Value, json};

use super::conversion::{Conversion, Convert, convert};

/// Two versions of a test kind: `size` is a number in v2 (the hub) and text in v1.
mod versions {
    use kube::CustomResource;
    use schemars::JsonSchema;
    use serde::{Deserialize, Serialize};

    pub mod v1 {
        use super::*;

        #[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, JsonSchema)]
        #[kube(
            group = "test.example.com",
            version = "v1",
            kind = "Widget",
            namespaced
        )]
        pub struct WidgetSpec {
            pub size: String,
        }
    }

    pub mod v2 {
        use super::*;

        #[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, JsonSchema)]
        #[kube(
            group = "test.example.com",
            version = "v2",
            kind = "Widget",
            namespaced
        )]
        pub struct WidgetSpec {
            pub size: i64,
        }
    }

    /// Text that is no number cannot be converted: the review fails, saying why.
    impl TryFrom<v1::Widget> for v2::Widget {
        type Error = String;

        fn try_from(spoke: v1::Widget) -> Result<Self, String> {
            // A partial object's size is the zero value, "".
            let size = match spoke.spec.size.as_str() {
                "" => 0,
                text => (text.parse()).map_err(|_| format!("size {text:?} is not a number"))?,
            };
            Ok(Self {
                metadata: spoke.metadata,
                spec: v2::WidgetSpec { size },
            })
        }
    }

    impl From<v2::Widget> for v1::Widget {
        fn from(hub: v2::Widget) -> Self {
            Self {
                metadata: hub.metadata,
                spec: v1::WidgetSpec {
                    size: hub.spec.size.to_string(),
                },
            }
        }
    }
}

fn conversion_review(desired: &str, objects: Value) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "ConversionReview",
        "request": {"uid": "6f2c5d8e", "desiredAPIVersion": desired, "objects": objects},
    }))
    .expect("a review")
}

fn widget(version: &str, size: Value) -> Value {
    json!({
        "apiVersion": format!("test.example.com/{version}"),
        "kind": "Widget",
        "metadata": {"name": "w", "namespace": "default", "uid": "u-1", "labels": {"a": "b"}},
        "spec": {"size": size},
    })
}

fn conversions() -> Vec<Box<dyn Convert>> {
    vec![Box::new(
        Conversion::<versions::v2::Widget>::hub().spoke::<versions::v1::Widget>(),
    )]
}

#[test]
fn conversion_goes_through_the_hub_both_ways_and_keeps_metadata() {
    let body = conversion_review(
        "test.example.com/v2",
        json!([widget("v1", json!("3")), widget("v2", json!(4))]),
    );
    let review = serde_json::to_value(convert(&body, &conversions())).expect("serializes");
    let response = &review["response"];
    assert_eq!(response["uid"], "6f2c5d8e");
    assert_eq!(response["result"]["status"], "Success", "{response}");
    assert_eq!(response["convertedObjects"][0], widget("v2", json!(3)));
    assert_eq!(response["convertedObjects"][1], widget("v2", json!(4)));

    let body = conversion_review("test.example.com/v1", json!([widget("v2", json!(5))]));
    let review = serde_json::to_value(convert(&body, &conversions())).expect("serializes");
    assert_eq!(
        review["response"]["convertedObjects"][0],
        widget("v1", json!("5"))
    );
}

/// Server-side apply's field pruning sends partial objects: `spec` null, no metadata.
#[test]
fn partial_objects_convert_with_zero_values_and_the_metadata_they_came_with() {
    let partial = json!({"apiVersion": "test.example.com/v1", "kind": "Widget", "spec": null});
    let nameless = json!({
        "apiVersion": "test.example.com/v2",
        "kind": "Widget",
        "metadata": {"annotations": {"kept": "yes"}},
    });
    let body = conversion_review("test.example.com/v2", json!([partial]));
    let review = serde_json::to_value(convert(&body, &conversions())).expect("serializes");
    let converted = &review["response"]["convertedObjects"][0];
    assert_eq!(
        *converted,
        json!({"apiVersion": "test.example.com/v2", "kind": "Widget", "spec": {"size": 0}}),
        "{review}"
    );
    let body = conversion_review("test.example.com/v1", json!([nameless]));
    let review = serde_json::to_value(convert(&body, &conversions())).expect("serializes");
    let converted = &review["response"]["convertedObjects"][0];
    assert_eq!(converted["spec"], json!({"size": "0"}), "{review}");
    assert_eq!(
        converted["metadata"],
        json!({"annotations": {"kept": "yes"}})
    );
}

#[test]
fn a_conversion_that_cannot_be_done_fails_the_review_naming_the_object() {
    let cases = [
        (
            widget("v3", json!(1)),
            "Widget has no version test.example.com/v3",
        ),
        (
            widget("v1", json!([])),
            "converting Widget w to test.example.com/v2",
        ),
        (
            widget("v1", json!("large")),
            "converting Widget w to test.example.com/v2: size \"large\" is not a number",
        ),
        (
            json!({"apiVersion": "other.example.com/v1", "kind": "Gadget"}),
            "no conversion for Gadget",
        ),
    ];
    for (object, expected) in cases {
        let body = conversion_review("test.example.com/v2", json!([object]));
        let review = serde_json::to_value(convert(&body, &conversions())).expect("serializes");
        let result = &review["response"]["result"];
        assert_eq!(result["status"], "Failure", "{review}");
        let message = result["message"].as_str().unwrap_or_default();
        assert!(message.contains(expected), "{message}");
    }
    let review = serde_json::to_value(convert(b"{", &conversions())).expect("serializes");
    assert_eq!(review["response"]["result"]["status"], "Failure");
}

/// While two versions have the same fields they are carried over by name; once they differ, the
/// copy fails naming the field, instead of giving an empty spec that a client reading one
/// version and writing it back would store over the real one.
#[test]
fn same_fields_fails_once_the_versions_differ() {
    use serde::{Deserialize, Serialize};

    use super::conversion::same_fields;

    #[derive(Serialize, Deserialize, Debug, PartialEq)]
    struct Old {
        size: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        note: Option<String>,
    }
    #[derive(Serialize, Deserialize, Debug, PartialEq)]
    struct Same {
        size: String,
        #[serde(default)]
        note: Option<String>,
        #[serde(default)]
        added: Vec<String>,
    }
    #[derive(Serialize, Deserialize, Debug, PartialEq)]
    struct Renamed {
        #[serde(default)]
        length: String,
    }
    #[derive(Serialize, Deserialize, Debug, PartialEq)]
    struct Retyped {
        size: i64,
    }
    let old = || Old {
        size: "3".into(),
        note: None,
    };
    let same: Same = same_fields(old()).expect("alike");
    assert_eq!(same.size, "3");
    let renamed = same_fields::<_, Renamed>(old()).expect_err("size has no place");
    assert!(renamed.to_string().contains("`size`"), "{renamed}");
    let retyped = same_fields::<_, Retyped>(old()).expect_err("size is a number there");
    assert!(
        retyped
            .to_string()
            .contains("write this field's conversion"),
        "{retyped}"
    );
    let nested = json!({"spec": {"items": [{"a": 1}, {"a": 2, "b": 3}]}});
    #[derive(Serialize, Deserialize)]
    struct Item {
        a: i64,
    }
    #[derive(Serialize, Deserialize)]
    struct Spec {
        items: Vec<Item>,
    }
    #[derive(Serialize, Deserialize)]
    struct Top {
        spec: Spec,
    }
    let error = same_fields::<_, Top>(nested).err().map(|e| e.to_string());
    assert!(
        error
            .as_deref()
            .is_some_and(|e| e.contains("`spec.items[1].b`")),
        "{error:?}"
    );
}
