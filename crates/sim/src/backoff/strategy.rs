//! Delay formulas between attempts, and the per-client state some of them need.

use std::fmt;
use std::str::FromStr;

use rand::Rng;

/// Largest cap accepted: one day. Bounding it keeps `base * 2^n` comparisons meaningful in f64.
pub const CAP_MS_MAX: f64 = 86_400_000.0;

/// Largest growth factor accepted by the decorrelated strategies.
pub const GROWTH_MAX: u32 = 15;

/// Exponent beyond which `base * 2^n` is above any accepted cap for any base >= 1e-9 ms,
/// so larger attempt numbers are clamped to it (keeps `2^n` a finite power of two).
const EXPONENT_MAX: u32 = 64;

/// Which delay formula a client uses before retry number `attempt` (1 for the first retry).
///
/// With `expo(n) = min(cap, base * 2^n)`, as in Brooker (2015):
/// - `None`: 0; `Constant`: `min(cap, base)`; `Exponential`: `expo(n)`;
/// - `EqualJitter`: `expo(n)/2 + U(0, expo(n)/2)`; `FullJitter`: `U(0, expo(n))`;
/// - `Decorrelated`: `sleep = min(cap, U(base, growth * sleep))`, sleep starting at base (the post
///   uses growth 3; it ignores `n`). Once `growth * sleep` passes the cap, most draws are clamped
///   to exactly the cap, so clients re-synchronise there;
/// - `DecorrelatedCapped`: `sleep = U(base, min(cap, growth * sleep))`: the cap bounds the range
///   *before* drawing, so delays stay jittered over `[base, cap]` once the cap is reached.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Strategy {
    None,
    Constant,
    Exponential,
    EqualJitter,
    FullJitter,
    Decorrelated { growth: u32 },
    DecorrelatedCapped { growth: u32 },
}

impl Strategy {
    /// Growth factor of decorrelated jitter in the AWS post.
    pub const DECORRELATED_GROWTH_POST: u32 = 3;

    /// The five strategies compared in the AWS post, in the post's order of presentation.
    pub const POST: [Strategy; 5] = [
        Strategy::None,
        Strategy::Exponential,
        Strategy::EqualJitter,
        Strategy::FullJitter,
        Strategy::Decorrelated {
            growth: Strategy::DECORRELATED_GROWTH_POST,
        },
    ];

    /// Stable, human-readable name used in CSV files and charts (parsed back by `FromStr`).
    pub fn name(&self) -> String {
        match *self {
            Strategy::None => "none".into(),
            Strategy::Constant => "constant".into(),
            Strategy::Exponential => "exponential".into(),
            Strategy::EqualJitter => "equal-jitter".into(),
            Strategy::FullJitter => "full-jitter".into(),
            Strategy::Decorrelated { growth: 3 } => "decorrelated-jitter".into(),
            Strategy::Decorrelated { growth } => format!("decorrelated-jitter-x{growth}"),
            Strategy::DecorrelatedCapped { growth: 3 } => "decorrelated-capped".into(),
            Strategy::DecorrelatedCapped { growth } => format!("decorrelated-capped-x{growth}"),
        }
    }

    /// True when consecutive delays depend on a carried `sleep` rather than on the attempt number.
    pub fn is_stateful(&self) -> bool {
        matches!(
            self,
            Strategy::Decorrelated { .. } | Strategy::DecorrelatedCapped { .. }
        )
    }

    fn growth(&self) -> Option<u32> {
        match *self {
            Strategy::Decorrelated { growth } | Strategy::DecorrelatedCapped { growth } => {
                Some(growth)
            }
            _ => None,
        }
    }
}

impl fmt::Display for Strategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

impl FromStr for Strategy {
    type Err = BackoffError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let simple = match s {
            "none" => Some(Strategy::None),
            "constant" => Some(Strategy::Constant),
            "exponential" => Some(Strategy::Exponential),
            "equal-jitter" => Some(Strategy::EqualJitter),
            "full-jitter" => Some(Strategy::FullJitter),
            "decorrelated-jitter" => Some(Strategy::Decorrelated { growth: 3 }),
            "decorrelated-capped" => Some(Strategy::DecorrelatedCapped { growth: 3 }),
            _ => None,
        };
        if let Some(strategy) = simple {
            return Ok(strategy);
        }
        let parse_growth = |rest: &str| -> Option<u32> {
            let growth: u32 = rest.parse().ok()?;
            (1..=GROWTH_MAX).contains(&growth).then_some(growth)
        };
        if let Some(growth) = s
            .strip_prefix("decorrelated-jitter-x")
            .and_then(parse_growth)
        {
            return Ok(Strategy::Decorrelated { growth });
        }
        if let Some(growth) = s
            .strip_prefix("decorrelated-capped-x")
            .and_then(parse_growth)
        {
            return Ok(Strategy::DecorrelatedCapped { growth });
        }
        Err(BackoffError::UnknownStrategy(s.to_string()))
    }
}

/// Invalid backoff parameters, or an unknown strategy name.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum BackoffError {
    #[error("unknown backoff strategy {0:?} (known: none, constant, exponential, equal-jitter, full-jitter, decorrelated-jitter[-xG], decorrelated-capped[-xG], G in 1..=15)")]
    UnknownStrategy(String),
    #[error("base_ms must be finite and >= 0, got {0}")]
    Base(f64),
    #[error("cap_ms must be finite, >= base_ms ({base_ms}) and <= {CAP_MS_MAX}, got {cap_ms}")]
    Cap { base_ms: f64, cap_ms: f64 },
    #[error("growth must be in 1..={GROWTH_MAX}, got {0}")]
    Growth(u32),
    #[error("decorrelated strategies need base_ms > 0 (a zero sleep never grows)")]
    DecorrelatedZeroBase,
}

/// A validated strategy with its base and cap. Immutable and `Copy`: share it between clients,
/// give each client its own [`BackoffState`] via [`Backoff::start`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Backoff {
    strategy: Strategy,
    base_ms: f64,
    cap_ms: f64,
}

/// Closed range `[delay_ms_min, delay_ms_max]` that the next delay is drawn from.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DelayBounds {
    pub delay_ms_min: f64,
    pub delay_ms_max: f64,
}

impl Backoff {
    pub fn new(strategy: Strategy, base_ms: f64, cap_ms: f64) -> Result<Self, BackoffError> {
        if !base_ms.is_finite() || base_ms < 0.0 {
            return Err(BackoffError::Base(base_ms));
        }
        if !cap_ms.is_finite() || cap_ms < base_ms || cap_ms > CAP_MS_MAX {
            return Err(BackoffError::Cap { base_ms, cap_ms });
        }
        if let Some(growth) = strategy.growth() {
            if !(1..=GROWTH_MAX).contains(&growth) {
                return Err(BackoffError::Growth(growth));
            }
            if base_ms == 0.0 {
                return Err(BackoffError::DecorrelatedZeroBase);
            }
        }
        Ok(Backoff {
            strategy,
            base_ms,
            cap_ms,
        })
    }

    /// The parameters of the AWS post: base 5 ms, cap 2000 ms.
    pub fn aws_post(strategy: Strategy) -> Self {
        Backoff::new(strategy, 5.0, 2000.0).expect("the post's parameters are valid")
    }

    pub fn strategy(&self) -> Strategy {
        self.strategy
    }

    pub fn base_ms(&self) -> f64 {
        self.base_ms
    }

    pub fn cap_ms(&self) -> f64 {
        self.cap_ms
    }

    /// `min(cap, base * 2^attempt)`.
    pub fn expo_ms(&self, attempt: u32) -> f64 {
        (self.base_ms * pow2(attempt.min(EXPONENT_MAX))).min(self.cap_ms)
    }

    /// A fresh per-client state (decorrelated jitter's sleep starts at base).
    pub fn start(&self) -> BackoffState {
        BackoffState {
            backoff: *self,
            sleep_ms: self.base_ms,
        }
    }
}

/// One client's backoff: the parameters plus what the stateful strategies carry between retries.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BackoffState {
    backoff: Backoff,
    sleep_ms: f64,
}

impl BackoffState {
    pub fn backoff(&self) -> &Backoff {
        &self.backoff
    }

    /// The range the next delay for retry `attempt` will be drawn from, given the current state.
    /// Lets a model checker branch over the extremes instead of sampling.
    pub fn bounds_ms(&self, attempt: u32) -> DelayBounds {
        let b = &self.backoff;
        let (delay_ms_min, delay_ms_max) = match b.strategy {
            Strategy::None => (0.0, 0.0),
            Strategy::Constant => (b.base_ms, b.base_ms),
            Strategy::Exponential => (b.expo_ms(attempt), b.expo_ms(attempt)),
            Strategy::EqualJitter => (b.expo_ms(attempt) / 2.0, b.expo_ms(attempt)),
            Strategy::FullJitter => (0.0, b.expo_ms(attempt)),
            Strategy::Decorrelated { growth } | Strategy::DecorrelatedCapped { growth } => {
                (b.base_ms, (self.sleep_ms * f64::from(growth)).min(b.cap_ms))
            }
        };
        DelayBounds {
            delay_ms_min,
            delay_ms_max,
        }
    }

    /// Draws the delay before retry number `attempt` (1 for the first retry), in milliseconds.
    /// Consumes at most one `f64` from `rng`, and none for the deterministic strategies, so
    /// equal generator states give equal sequences.
    ///
    /// Inlined: the AWS world calls it on every failed write, and out of line its call cost
    /// more than the draw.
    #[inline(always)]
    pub fn next_delay_ms<R: Rng + ?Sized>(&mut self, attempt: u32, rng: &mut R) -> f64 {
        let b = self.backoff;
        match b.strategy {
            Strategy::None => 0.0,
            Strategy::Constant => b.base_ms,
            Strategy::Exponential => b.expo_ms(attempt),
            Strategy::EqualJitter => {
                let half_ms = b.expo_ms(attempt) / 2.0;
                half_ms + uniform_ms(rng, 0.0, half_ms)
            }
            Strategy::FullJitter => uniform_ms(rng, 0.0, b.expo_ms(attempt)),
            Strategy::Decorrelated { growth } => {
                let high_ms = self.sleep_ms * f64::from(growth);
                self.sleep_ms = uniform_ms(rng, b.base_ms, high_ms).min(b.cap_ms);
                self.sleep_ms
            }
            Strategy::DecorrelatedCapped { growth } => {
                let high_ms = (self.sleep_ms * f64::from(growth)).min(b.cap_ms);
                self.sleep_ms = uniform_ms(rng, b.base_ms, high_ms);
                self.sleep_ms
            }
        }
    }
}

/// `2^n` for `n <= EXPONENT_MAX`, built from its exponent bits. Exact, so bit-identical to
/// `2f64.powi(n)` (which is exact too for these `n`), without `powi`'s call to the
/// compiler-rt loop on every delay.
fn pow2(n: u32) -> f64 {
    debug_assert!(n <= EXPONENT_MAX);
    f64::from_bits((1023 + u64::from(n)) << 52)
}

/// Uniform in `[low, high]` (half-open in exact arithmetic; the `min` guards the rounding of
/// `low + (high - low) * u`, which can land one ulp above `high`).
fn uniform_ms<R: Rng + ?Sized>(rng: &mut R, low_ms: f64, high_ms: f64) -> f64 {
    debug_assert!(low_ms <= high_ms);
    let unit: f64 = rng.random();
    (low_ms + (high_ms - low_ms) * unit).min(high_ms)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    #[test]
    fn names_round_trip() {
        let all = [
            Strategy::None,
            Strategy::Constant,
            Strategy::Exponential,
            Strategy::EqualJitter,
            Strategy::FullJitter,
            Strategy::Decorrelated { growth: 3 },
            Strategy::Decorrelated { growth: 2 },
            Strategy::DecorrelatedCapped { growth: 3 },
            Strategy::DecorrelatedCapped { growth: 2 },
        ];
        for strategy in all {
            assert_eq!(strategy.name().parse::<Strategy>(), Ok(strategy));
        }
        assert!("decorrelated-jitter-x0".parse::<Strategy>().is_err());
        assert!("jitter".parse::<Strategy>().is_err());
    }

    #[test]
    fn post_exponential_sequence() {
        let mut state = Backoff::aws_post(Strategy::Exponential).start();
        let mut rng = ChaCha8Rng::seed_from_u64(0);
        let delays: Vec<f64> = (1..=10)
            .map(|attempt| state.next_delay_ms(attempt, &mut rng))
            .collect();
        // 5 * 2^n for n = 1.., capped at 2000 from n = 9 on.
        assert_eq!(
            delays,
            [10.0, 20.0, 40.0, 80.0, 160.0, 320.0, 640.0, 1280.0, 2000.0, 2000.0]
        );
    }

    #[test]
    fn pow2_is_powi() {
        for n in 0..=EXPONENT_MAX {
            assert_eq!(pow2(n).to_bits(), 2f64.powi(n as i32).to_bits(), "2^{n}");
        }
    }

    #[test]
    fn huge_attempt_numbers_stay_at_cap() {
        let backoff = Backoff::aws_post(Strategy::Exponential);
        assert_eq!(backoff.expo_ms(u32::MAX), 2000.0);
    }

    #[test]
    fn invalid_parameters_are_rejected() {
        assert!(Backoff::new(Strategy::FullJitter, -1.0, 10.0).is_err());
        assert!(Backoff::new(Strategy::FullJitter, 10.0, 5.0).is_err());
        assert!(Backoff::new(Strategy::FullJitter, 1.0, f64::INFINITY).is_err());
        assert!(Backoff::new(Strategy::Decorrelated { growth: 0 }, 1.0, 5.0).is_err());
        assert!(Backoff::new(Strategy::Decorrelated { growth: 3 }, 0.0, 5.0).is_err());
        assert!(Backoff::new(Strategy::None, 0.0, 0.0).is_ok());
    }

    #[test]
    fn decorrelated_sticks_to_cap_but_capped_variant_does_not() {
        // The known critique: with growth 3, once sleep is at the cap, min(cap, U(base, 3 cap))
        // lands exactly on the cap again with probability (3 cap - cap) / (3 cap - base) ~ 2/3.
        // The capped variant draws U(base, cap) there and (almost) never repeats the cap.
        let draws = 20_000;
        let stay_at_cap_share = |strategy: Strategy| {
            let mut state = Backoff::aws_post(strategy).start();
            let mut rng = ChaCha8Rng::seed_from_u64(7);
            let (mut at_cap, mut stayed) = (0u32, 0u32);
            let mut previous_ms = 0.0;
            for attempt in 1..=draws {
                let delay_ms = state.next_delay_ms(attempt, &mut rng);
                if previous_ms == 2000.0 {
                    at_cap += 1;
                    stayed += u32::from(delay_ms == 2000.0);
                }
                previous_ms = delay_ms;
            }
            (at_cap, f64::from(stayed) / f64::from(at_cap.max(1)))
        };
        let (plain_visits, plain_stay) = stay_at_cap_share(Strategy::Decorrelated { growth: 3 });
        let (_, capped_stay) = stay_at_cap_share(Strategy::DecorrelatedCapped { growth: 3 });
        // ... while it still spends time near the cap, jittered: draws in the top 5% of the range.
        let mut capped = Backoff::aws_post(Strategy::DecorrelatedCapped { growth: 3 }).start();
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let near_cap = (1..=draws)
            .filter(|&attempt| capped.next_delay_ms(attempt, &mut rng) > 1900.0)
            .count();
        assert!(
            near_cap > 100,
            "capped variant near the cap {near_cap} times"
        );
        assert!(plain_visits > 1000, "the cap was reached: {plain_visits}");
        assert!(
            (plain_stay - 4000.0 / 5995.0).abs() < 0.03,
            "plain stays at cap {plain_stay}"
        );
        assert!(capped_stay < 0.01, "capped stays at cap {capped_stay}");
    }
}
