//! Any bytes into the `apply` request and answer readers: never a panic; every refusal names a
//! member that is in the input (or the root); an accepted request or answer writes JSON that
//! reads back equal.
#![no_main]

use gpu_partition_types::{ApplyAnswer, ApplyRequest, Bdf, PointerToken, Refused};
use libfuzzer_sys::fuzz_target;

/// The refusal's pointer is the root, or names a path whose parent is in the input.
fn names_its_member(data: &[u8], refused: &Refused) {
    let tokens = refused.pointer.tokens();
    if tokens.is_empty() {
        return;
    }
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(data) else {
        panic!("a refusal at {:?} of bytes that are not JSON", refused.pointer.to_string());
    };
    let mut at = &value;
    for token in &tokens[..tokens.len() - 1] {
        at = match token {
            PointerToken::Member(name) => at.get(name.as_str()),
            PointerToken::Index(index) => at.get(*index),
        }
        .unwrap_or_else(|| panic!("{} names no member of the input", refused.pointer));
    }
}

fuzz_target!(|data: &[u8]| {
    match ApplyRequest::from_json(data) {
        Ok(request) => {
            let again = ApplyRequest::from_json(request.to_json().as_bytes());
            assert_eq!(again.as_ref(), Ok(&request));
        }
        Err(refused) => names_its_member(data, &refused),
    }
    let device: Bdf = Bdf {
        domain: 0,
        bus: 0x3b,
        device: 0,
        function: 0,
    };
    match ApplyAnswer::from_json(data, &device) {
        Ok(answer) => {
            let again = ApplyAnswer::from_json(answer.to_json().as_bytes(), &device);
            let again = again.unwrap_or_else(|refused| panic!("a written answer was refused: {refused}"));
            assert_eq!(again.to_json(), answer.to_json());
        }
        Err(refused) => {
            // A fault inside the reply is named under /reply by the reply's reader, whose
            // pointers may name a member of a page; only the envelope is checked here.
            if refused.pointer.tokens().first() != Some(&PointerToken::Member("reply".to_owned())) {
                names_its_member(data, &refused);
            }
        }
    }
});
