//! A small deterministic generator (SplitMix64): the same seed gives the
//! same cases on any machine and thread count. Case `i` of a run gets its
//! own stream, derived from `(seed, i)`, so no stream is shared.

/// SplitMix64 (Steele, Lea, Flood 2014): 64 bits of state, passes BigCrush.
#[derive(Debug, Clone)]
pub struct Rng(u64);

fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl Rng {
    /// The stream of case `index` of a run seeded `seed`.
    pub fn for_case(seed: u64, index: u64) -> Self {
        Rng(mix(seed ^ mix(index.wrapping_add(0x9E37_79B9_7F4A_7C15))))
    }

    /// The next 64 bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        mix(self.0)
    }

    /// Uniform in `0..n` (`n` > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        // Lemire's multiply-shift; the bias is below 2^-32 for the small n used here.
        ((self.next_u64() >> 32) * n) >> 32
    }

    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi - lo + 1)
    }

    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        ((self.next_u64() >> 11) as f64 / (1u64 << 53) as f64) < p
    }

    /// One of `items` (non-empty).
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }

    /// An index drawn by `weights` (their sum above 0).
    pub fn weighted(&mut self, weights: &[u32]) -> usize {
        let total: u64 = weights.iter().map(|w| *w as u64).sum();
        let mut x = self.below(total);
        for (i, w) in weights.iter().enumerate() {
            if x < *w as u64 {
                return i;
            }
            x -= *w as u64;
        }
        weights.len() - 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_are_per_case_and_stable() {
        let a: Vec<u64> = (0..4).map(|_| Rng::for_case(7, 3).next_u64()).collect();
        assert!(a.windows(2).all(|w| w[0] == w[1]));
        assert_ne!(
            Rng::for_case(7, 3).next_u64(),
            Rng::for_case(7, 4).next_u64()
        );
        assert_ne!(
            Rng::for_case(7, 3).next_u64(),
            Rng::for_case(8, 3).next_u64()
        );
        let mut r = Rng::for_case(1, 1);
        let mut seen = [0u32; 3];
        for _ in 0..3000 {
            seen[r.weighted(&[1, 0, 2])] += 1;
        }
        assert_eq!(seen[1], 0);
        assert!(seen[2] > seen[0], "{seen:?}");
        assert!((0..1000).all(|_| r.range(3, 5) >= 3 && r.range(3, 5) <= 5));
    }
}
