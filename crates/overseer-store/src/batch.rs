//! Ed25519 batch verification for signatures that all share one key: the
//! audit log's, every record signed by the engine's key.
//!
//! The check is `ed25519_dalek::verify_batch`'s, term for term: for
//! signatures `(R_i, s_i)` over messages `M_i` with `h_i = H(R_i || A ||
//! M_i)` and random 128-bit `z_i`,
//!
//! ```text
//! [-Σ z_i s_i] B + Σ [z_i] R_i + Σ [z_i h_i] A == identity
//! ```
//!
//! With one key `A` the last sum is one term, `[Σ z_i h_i] A`: the
//! multiscalar multiplication has `n + 2` points instead of `2n + 1`, about
//! half the work of the largest part of verification. Everything else is
//! as in ed25519-dalek: `s` must be canonical (below the group order), `R`
//! must decompress, the equation is checked without the cofactor. The
//! coefficients `z_i` come from the operating system's random source (the
//! textbook form of the batch test; ed25519-dalek derives them from a hash
//! of the batch instead, to need no randomness): nobody can choose
//! signatures that cancel out in a combination they cannot predict, so a
//! batch holding a signature that does not verify fails except with
//! probability about 2^-128.

use curve25519_dalek::constants::ED25519_BASEPOINT_POINT;
use curve25519_dalek::edwards::{CompressedEdwardsY, EdwardsPoint};
use curve25519_dalek::scalar::Scalar;
use curve25519_dalek::traits::{IsIdentity, VartimeMultiscalarMul};
use ed25519_dalek::{Signature, VerifyingKey};
use rand_core::{OsRng, RngCore};
use sha2::{Digest, Sha512};

/// Whether every one of `signatures` (of `messages`, all by `key`) verifies,
/// as `ed25519_dalek::verify_batch` with `key` for each would say. False
/// also when the batch cannot be checked (lengths differ, no randomness):
/// the caller then checks each signature alone.
pub(crate) fn verify_one_key(
    key: &VerifyingKey,
    messages: &[&[u8]],
    signatures: &[Signature],
) -> bool {
    let n = signatures.len();
    if messages.len() != n {
        return false;
    }
    if n == 0 {
        return true;
    }
    let mut random = vec![0u8; 16 * n];
    if OsRng.try_fill_bytes(&mut random).is_err() {
        return false;
    }
    let a = key.to_edwards();
    let mut b_coefficient = Scalar::ZERO;
    let mut a_coefficient = Scalar::ZERO;
    let mut scalars: Vec<Scalar> = Vec::with_capacity(n + 2);
    let mut points: Vec<Option<EdwardsPoint>> = Vec::with_capacity(n + 2);
    for ((sig, message), z) in signatures.iter().zip(messages).zip(random.chunks_exact(16)) {
        let Some(s) = Option::<Scalar>::from(Scalar::from_canonical_bytes(*sig.s_bytes())) else {
            return false;
        };
        let Some(r) = CompressedEdwardsY(*sig.r_bytes()).decompress() else {
            return false;
        };
        let mut z_bytes = [0u8; 32];
        z_bytes[..16].copy_from_slice(z);
        let z = Scalar::from_bytes_mod_order(z_bytes);
        let h = Scalar::from_bytes_mod_order_wide(
            &Sha512::new()
                .chain_update(sig.r_bytes())
                .chain_update(key.as_bytes())
                .chain_update(message)
                .finalize()
                .into(),
        );
        b_coefficient += z * s;
        a_coefficient += z * h;
        scalars.push(z);
        points.push(Some(r));
    }
    scalars.push(-b_coefficient);
    points.push(Some(ED25519_BASEPOINT_POINT));
    scalars.push(a_coefficient);
    points.push(Some(a));
    EdwardsPoint::optional_multiscalar_mul(scalars, points).is_some_and(|p| p.is_identity())
}

#[cfg(test)]
mod tests {
    use super::verify_one_key;
    use ed25519_dalek::{Signature, Signer, SigningKey, Verifier};

    fn signed(key: &SigningKey, n: usize) -> (Vec<Vec<u8>>, Vec<Signature>) {
        let messages: Vec<Vec<u8>> = (0..n)
            .map(|i| format!("record hash {i}").into_bytes())
            .collect();
        let signatures = messages.iter().map(|m| key.sign(m)).collect();
        (messages, signatures)
    }

    /// Says what ed25519-dalek's own batch check says, on good batches and
    /// on every way a batch can be bad: a signature of another key, a
    /// message changed, `s` pushed past the group order (the same point
    /// equation, a non-canonical encoding), an `R` that is no point.
    #[test]
    fn agrees_with_ed25519_dalek_on_good_and_bad_batches() {
        let mut rng = rand_core::OsRng;
        let key = SigningKey::generate(&mut rng);
        let other = SigningKey::generate(&mut rng);
        let public = key.verifying_key();
        let dalek = |messages: &[&[u8]], signatures: &[Signature]| {
            ed25519_dalek::verify_batch(messages, signatures, &vec![public; signatures.len()])
                .is_ok()
        };
        for n in [1, 2, 7, 64, 300] {
            let (messages, signatures) = signed(&key, n);
            let refs: Vec<&[u8]> = messages.iter().map(Vec::as_slice).collect();
            assert!(verify_one_key(&public, &refs, &signatures), "{n} good");
            assert!(dalek(&refs, &signatures));
            let last = n - 1;

            let mut forged = signatures.clone();
            forged[last] = other.sign(&messages[last]);
            let mut changed = messages.clone();
            changed[0].push(b'!');
            let changed_refs: Vec<&[u8]> = changed.iter().map(Vec::as_slice).collect();
            // s + l: the group order added to s is the same scalar mod l.
            let mut malleable = signatures.clone();
            let mut bytes = malleable[last].to_bytes();
            add_group_order(&mut bytes[32..]);
            malleable[last] = Signature::from_bytes(&bytes);
            assert!(
                public.verify(&messages[last], &malleable[last]).is_err(),
                "a non-canonical s does not verify alone either"
            );
            let mut no_point = signatures.clone();
            let mut bytes = no_point[0].to_bytes();
            // y = 2 is not on the curve.
            bytes[..32].copy_from_slice(&[0u8; 32]);
            bytes[0] = 2;
            no_point[0] = Signature::from_bytes(&bytes);
            for (what, m, s) in [
                ("another key's signature", &refs, &forged),
                ("a message changed", &changed_refs, &signatures),
                ("a non-canonical s", &refs, &malleable),
                ("an R that is no point", &refs, &no_point),
            ] {
                assert!(!verify_one_key(&public, m, s), "{n}: {what} passed");
                assert!(!dalek(m, s), "{n}: {what} passed ed25519-dalek");
            }
        }
        assert!(verify_one_key(&public, &[], &[]));
        let (messages, signatures) = signed(&key, 3);
        let refs: Vec<&[u8]> = messages.iter().map(Vec::as_slice).collect();
        assert!(
            !verify_one_key(&public, &refs[..2], &signatures),
            "as many messages as signatures"
        );
    }

    /// Little-endian `s += l` (the group order) in place.
    fn add_group_order(s: &mut [u8]) {
        const L: [u8; 32] = [
            0xed, 0xd3, 0xf5, 0x5c, 0x1a, 0x63, 0x12, 0x58, 0xd6, 0x9c, 0xf7, 0xa2, 0xde, 0xf9,
            0xde, 0x14, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x10,
        ];
        let mut carry = 0u16;
        for (b, l) in s.iter_mut().zip(L) {
            let sum = u16::from(*b) + u16::from(l) + carry;
            *b = (sum & 0xff) as u8;
            carry = sum >> 8;
        }
    }
}
