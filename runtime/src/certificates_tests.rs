use super::*;

fn hosts() -> Vec<String> {
    vec!["webhook-service.system.svc".into(), "127.0.0.1".into()]
}

fn at(days: i64) -> OffsetDateTime {
    OffsetDateTime::from_unix_timestamp(1_800_000_000).expect("time") + time::Duration::days(days)
}

/// Whether the certificate `leaf` is signed by the CA `ca`.
fn signed_by(leaf: &str, ca: &str) -> bool {
    check(ca, |ca| {
        check(leaf, |leaf| {
            leaf.verify_signature(Some(ca.public_key())).is_ok()
        })
    })
}

#[test]
fn a_secret_without_keys_gets_a_ca_and_a_certificate_for_the_hosts() {
    let keys = renew(None, &hosts(), at(0))
        .expect("renew")
        .expect("new keys");
    let ca = certificates(&keys.ca_bundle);
    assert_eq!(ca.len(), 1);
    assert!(signed_by(&keys.cert, &ca[0]));
    assert!(check(&keys.cert, |leaf| covers(leaf, &hosts())
        && key_matches(leaf, &keys.key)));
    assert_eq!(not_after(&keys.cert), Some(at(0) + LEAF_LIFETIME));
    // Nothing to do the next day.
    assert_eq!(renew(Some(&keys), &hosts(), at(1)).expect("renew"), None);
}

#[test]
fn the_certificate_is_renewed_long_before_the_ca_and_by_the_same_ca() {
    let keys = renew(None, &hosts(), at(0))
        .expect("renew")
        .expect("new keys");
    let later = at(90) - LEAF_RENEW_BEFORE + time::Duration::days(1);
    let renewed = renew(Some(&keys), &hosts(), later)
        .expect("renew")
        .expect("renewed");
    assert_eq!(renewed.ca_bundle, keys.ca_bundle, "same CA");
    assert_ne!(renewed.cert, keys.cert);
    assert_eq!(not_after(&renewed.cert), Some(later + LEAF_LIFETIME));
}

#[test]
fn a_ca_near_its_end_is_replaced_and_the_old_one_stays_trusted_until_it_expires() {
    let keys = renew(None, &hosts(), at(0))
        .expect("renew")
        .expect("new keys");
    let near_end = at(3650) - CA_RENEW_BEFORE + time::Duration::days(1);
    let renewed = renew(Some(&keys), &hosts(), near_end)
        .expect("renew")
        .expect("renewed");
    let bundle = certificates(&renewed.ca_bundle);
    assert_eq!(bundle.len(), 2, "new CA first, the old one after");
    assert_eq!(bundle[1], keys.ca_bundle);
    assert!(signed_by(&renewed.cert, &bundle[0]));
    // Once the old CA expired it leaves the bundle.
    let after = at(3651);
    let pruned = renew(Some(&renewed), &hosts(), after)
        .expect("renew")
        .expect("pruned");
    assert_eq!(certificates(&pruned.ca_bundle).len(), 1);
}

#[test]
fn a_certificate_for_other_hosts_or_with_another_key_is_replaced() {
    let keys = renew(None, &hosts(), at(0))
        .expect("renew")
        .expect("new keys");
    let more = vec!["other.system.svc".to_owned()];
    assert!(renew(Some(&keys), &more, at(1)).expect("renew").is_some());
    let other = renew(None, &hosts(), at(0))
        .expect("renew")
        .expect("new keys");
    let mixed = Keys {
        key: other.key.clone(),
        ..keys.clone()
    };
    let fixed = renew(Some(&mixed), &hosts(), at(1))
        .expect("renew")
        .expect("fixed");
    assert_eq!(fixed.ca_bundle, keys.ca_bundle);
    assert!(check(&fixed.cert, |leaf| key_matches(leaf, &fixed.key)));
}

#[test]
fn garbage_in_the_secret_is_replaced_not_a_panic() {
    let garbage = Keys {
        ca_bundle: "not a certificate".into(),
        ca_key: String::new(),
        cert: "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n".into(),
        key: "x".into(),
    };
    let keys = renew(Some(&garbage), &hosts(), at(0))
        .expect("renew")
        .expect("new keys");
    assert_eq!(renew(Some(&keys), &hosts(), at(0)).expect("renew"), None);
}
