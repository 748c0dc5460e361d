//! The pattern checks every kind's controller tests run: the same conversations with the
//! mocked API server, whatever the kind (children from the spec alone, convergence and
//! idempotence, drift repaired, deletion released).

use super::*;

/// `object` with the status a successful reconcile writes (where `R` owns the status), and its
/// finalizer if it has one.
pub fn converged<R: Reconcile>(object: &R::Kind) -> R::Kind {
    let mut json = serde_json::to_value(object).expect("serializes");
    if R::OWNS_STATUS {
        let generation = object.meta().generation;
        json["status"]["observedGeneration"] = json!(generation);
        let mut conditions: Vec<Condition> = (json["status"]["conditions"].as_array())
            .into_iter()
            .flatten()
            .filter_map(|c| serde_json::from_value(c.clone()).ok())
            .collect();
        let ready = crate::status::condition(
            "Ready",
            true,
            "Reconciled",
            "all children are up to date",
            generation,
        );
        crate::status::set_condition(&mut conditions, ready);
        json["status"]["conditions"] = json!(conditions);
    }
    let mut converged: R::Kind = serde_json::from_value(json).expect("deserializes");
    if let Some(finalizer) = R::FINALIZER {
        converged.finalizers_mut().push(finalizer.to_owned());
    }
    converged
}

/// `object` as a reconcile leaves it once `children` exist: [`converged`], with the status
/// fields of its own that it then reports.
pub async fn settled<R: Reconcile>(
    reconciler: &R,
    object: &R::Kind,
    children: &[Value],
) -> R::Kind {
    let converged = converged::<R>(object);
    let desired = desired_with(reconciler, &converged, children, &[]).await;
    let mut json = serde_json::to_value(&converged).expect("serializes");
    let mut conditions: Vec<Condition> =
        serde_json::from_value(json["status"]["conditions"].take()).unwrap_or_default();
    if let Some(progress) = desired.progress.as_ref().filter(|_| R::OWNS_STATUS) {
        // Not ready yet, as the reconciler reports it.
        let generation = object.meta().generation;
        for (type_, status) in [("Ready", false), ("Reconciling", true)] {
            let condition = crate::status::condition(
                type_,
                status,
                &progress.reason,
                progress.message.clone(),
                generation,
            );
            crate::status::set_condition(&mut conditions, condition);
        }
    }
    let Some(own) = desired.status else {
        json["status"]["conditions"] = json!(conditions);
        return serde_json::from_value(json).expect("deserializes");
    };
    for (key, value) in own.as_object().into_iter().flatten() {
        match key.as_str() {
            "observedGeneration" => {}
            "conditions" => {
                let own: Vec<Condition> = serde_json::from_value(value.clone()).unwrap_or_default();
                for condition in own {
                    crate::status::set_condition(&mut conditions, condition);
                }
            }
            _ if value.is_null() => {}
            _ => json["status"][key] = value.clone(),
        }
    }
    json["status"]["conditions"] = json!(conditions);
    serde_json::from_value(json).expect("deserializes")
}

/// Checks that a successful reconcile's `action` asks to look again when `object` says
/// ([`crate::Desired::requeue_after`], at most the hourly resync), and otherwise waits for a
/// change (the controller's resync timer looks at every object each hour). A controller whose
/// requeue moves between two calls (it is computed from the clock) need only requeue.
async fn assert_requeue<R: Reconcile>(reconciler: &R, object: &R::Kind, action: &Action) {
    let first = desired(reconciler, object).await.requeue_after;
    let second = desired(reconciler, object).await.requeue_after;
    if first != second {
        assert_ne!(
            *action,
            Action::await_change(),
            "the object is never looked at again"
        );
        return;
    }
    let expected = match first {
        Some(delay) => Action::requeue(delay.min(RESYNC)),
        None => Action::await_change(),
    };
    assert_eq!(*action, expected, "the reconcile's requeue");
}

/// The children depend on the object alone (its spec, and the time, which stands still in
/// tests at [`NOW`]): deriving them twice gives the same objects, each with a name, and a
/// namespace for a namespaced kind.
pub async fn children_come_from_the_spec_alone<R: Reconcile>(reconciler: R, object: &R::Kind) {
    let first = desired(&reconciler, object).await.children;
    let second = desired(&reconciler, object).await.children;
    assert!(!first.is_empty(), "the object asks for no child");
    assert_eq!(first, second, "the same spec asked for other children");
    for child in &first {
        let metadata = &child["metadata"];
        let namespaced = (R::Children::kinds().iter())
            .any(|kind| kind.namespaced && crate::caches::is_of(child, &kind.resource));
        assert!(
            metadata["name"].is_string() && metadata["namespace"].is_string() == namespaced,
            "a name, and a namespace for a namespaced kind only: {child}"
        );
    }
}

/// A new object: its finalizer (if it has one) is added, each child is created (a create, which
/// the API server refuses for a name already taken), owned by the object, with an event, and
/// the object becomes Ready at its generation (where the controller owns its status).
/// Reconciling the converged object again sends no request at all.
pub async fn converges_and_is_idempotent<R: Reconcile>(reconciler: R, object: R::Kind) {
    let reconciler = Arc::new(reconciler);
    let (shared, mut server) = mock_shared_arc(reconciler.clone(), Vec::<Value>::new());
    let children = applied_children(&*reconciler, &object).await;
    let progressing = desired(&*reconciler, &object).await.progress.is_some();
    let expected = children.clone();
    let owner_uid = object.uid().expect("uid");
    let reply = serde_json::to_value(converged::<R>(&object)).expect("serializes");
    let object_path = path_of(&object);
    let events = events_path(&object);
    let scenario = async move {
        if let Some(finalizer) = R::FINALIZER {
            let request = server
                .expect(Method::PATCH, &object_path, StatusCode::OK, reply.clone())
                .await;
            assert_eq!(finalizers_written(request), Some(json!([finalizer])));
        }
        for child in &expected {
            let collection = child_collection::<R>(child);
            let request = server
                .expect(
                    Method::POST,
                    &collection,
                    StatusCode::CREATED,
                    child.clone(),
                )
                .await;
            assert!(
                request.query.contains(&format!("fieldManager={MANAGER}")),
                "created as this manager"
            );
            assert_eq!(request.body["metadata"]["name"], child["metadata"]["name"]);
            let owner = &request.body["metadata"]["ownerReferences"][0];
            assert_eq!(owner["uid"], json!(owner_uid));
            assert_eq!(owner["controller"], true);
            assert_eq!(owner["blockOwnerDeletion"], true);
            assert_eq!(request.body["metadata"]["labels"][MANAGED_BY], MANAGER);
            let event = server
                .expect(Method::POST, &events, StatusCode::CREATED, json!({}))
                .await;
            assert_eq!(event.body["reason"], "Created");
        }
        if R::OWNS_STATUS {
            let status_path = format!("{object_path}/status");
            let mut request = server
                .expect(Method::PATCH, &status_path, StatusCode::OK, reply.clone())
                .await;
            // The kind's own status fields, if it has any, come first, by a manager of their own.
            if request
                .query
                .contains(&format!("fieldManager={MANAGER}-status"))
            {
                request = server
                    .expect(Method::PATCH, &status_path, StatusCode::OK, reply)
                    .await;
            }
            let status = &request.body["status"];
            assert_eq!(status["observedGeneration"], 1);
            assert_eq!(status["conditions"][0]["type"], "Ready");
            // Ready, unless `desired()` says the object is still progressing.
            let ready = if progressing { "False" } else { "True" };
            assert_eq!(status["conditions"][0]["status"], ready);
        }
        server
    };
    let (action, _) = converse(scenario, reconcile(Arc::new(object.clone()), shared)).await;
    let action = action.expect("reconcile succeeds");
    assert_requeue(&*reconciler, &object, &action).await;

    let settled = settled(&*reconciler, &object, &children).await;
    let (shared, server) = mock_shared_arc(reconciler.clone(), children);
    let (action, requests) =
        converse(async move { server }, reconcile(Arc::new(settled), shared)).await;
    let action = action.expect("reconcile succeeds");
    assert_requeue(&*reconciler, &object, &action).await;
    assert!(
        requests.is_empty(),
        "a converged object was written: {requests:?}"
    );
}

/// A field this manager applies, changed by someone else, is applied again (with an
/// `Updated` event); a field someone else added is theirs and causes no write.
pub async fn drift_is_repaired<R: Reconcile>(reconciler: R, object: R::Kind) {
    let reconciler = Arc::new(reconciler);
    let children = applied_children(&*reconciler, &object).await;
    let object = settled(&*reconciler, &object, &children).await;
    let mut edited = children.clone();
    for child in &mut edited {
        child["metadata"]["labels"][MANAGED_BY] = "someone-else".into();
    }
    let expected = children.clone();
    let events = events_path(&object);
    let (shared, mut server) = mock_shared_arc(reconciler.clone(), edited);
    let scenario = async move {
        for child in &expected {
            let path = child_path::<R>(child);
            let mut reply = child.clone();
            reply["metadata"]["resourceVersion"] = "2".into();
            let request = server
                .expect(Method::PATCH, &path, StatusCode::OK, reply)
                .await;
            assert_eq!(request.body["metadata"]["labels"][MANAGED_BY], MANAGER);
            let event = server
                .expect(Method::POST, &events, StatusCode::CREATED, json!({}))
                .await;
            assert_eq!(event.body["reason"], "Updated");
        }
        server
    };
    let (action, _) = converse(scenario, reconcile(Arc::new(object.clone()), shared)).await;
    let action = action.expect("reconcile succeeds");
    assert_requeue(&*reconciler, &object, &action).await;

    let mut annotated = children;
    for child in &mut annotated {
        child["metadata"]["annotations"]["example.com/added-by"] = "someone else".into();
    }
    let (shared, server) = mock_shared_arc(reconciler.clone(), annotated);
    let (action, requests) = converse(
        async move { server },
        reconcile(Arc::new(object.clone()), shared),
    )
    .await;
    let action = action.expect("reconcile succeeds");
    assert_requeue(&*reconciler, &object, &action).await;
    assert!(
        requests.is_empty(),
        "another manager's field caused a write: {requests:?}"
    );
}

/// Deleting an object: without a finalizer nothing is asked of the operator (garbage
/// collection removes the children); with one, cleanup runs and the finalizer is removed from
/// the object as the API server has it then (cleanup may have written it).
pub async fn deletion_is_released<R: Reconcile>(reconciler: R, object: R::Kind) {
    let reconciler = Arc::new(reconciler);
    let children = applied_children(&*reconciler, &object).await;
    let mut object = settled(&*reconciler, &object, &children).await;
    object.meta_mut().deletion_timestamp = Some(Time(Timestamp::now()));
    let (shared, mut server) = mock_shared_arc(reconciler.clone(), children);
    let object_path = path_of(&object);
    let events = events_path(&object);
    let mut released = object.clone();
    released.finalizers_mut().clear();
    let reply = serde_json::to_value(&released).expect("serializes");
    let object_json = serde_json::to_value(&object).expect("serializes");
    let scenario = async move {
        if R::FINALIZER.is_some() {
            // Whatever cleanup asks first is answered: the object for the object (and its
            // status), what was sent for anything else.
            let releases = |r: &Recorded| {
                r.method == Method::PATCH
                    && r.path == object_path
                    && finalizers_written(r) == Some(json!([]))
            };
            let answer = |r: &Recorded| {
                if releases(r) {
                    reply.clone()
                } else if r.path == object_path || r.path == format!("{object_path}/status") {
                    object_json.clone()
                } else {
                    r.body.clone()
                }
            };
            server.serve_until(releases, answer).await;
            server.expect_event(&events, "CleanedUp").await;
        }
        server
    };
    let (action, requests) = converse(scenario, reconcile(Arc::new(object), shared)).await;
    assert_eq!(action.expect("deletion succeeds"), Action::await_change());
    if R::FINALIZER.is_none() {
        assert!(requests.is_empty(), "{requests:?}");
    }
}

/// The finalizers a request writes: the value of its JSON patch's operation on
/// `/metadata/finalizers` (the runtime changes them with a JSON patch that tests them first).
pub fn finalizers_written(request: &Recorded) -> Option<Value> {
    let operations = request.body.as_array()?;
    let write = operations.iter().find(|operation| {
        operation["path"] == "/metadata/finalizers" && operation["op"] != "test"
    })?;
    Some(write["value"].clone())
}
