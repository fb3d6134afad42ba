//! Placing the wanted GPU instances: an exhaustive search over the candidate placements of each
//! profile, keeping as many of the card's own instances as any fit can, and, among fits that
//! keep as many, taking the first in a fixed order (profiles as given, placements by start),
//! so the same card and layout always give the same placements.

use gpu_partition_types::Placement;
use std::collections::HashMap;

/// Where one wanted instance may go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    /// The placement, in memory slices.
    pub placement: Placement,
    /// The card's instance of this profile already there, when there is one, and whether it
    /// already has its compute instance.
    pub existing: Option<(u32, bool)>,
}

/// The instances of one profile to place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Demand {
    /// How many.
    pub count: u32,
    /// Where they may go, sorted by start then size, one per placement.
    pub candidates: Vec<Candidate>,
}

/// How good a fit is: instances kept, then kept instances that need no new compute instance.
pub type Score = (u32, u32);

fn mask(placement: Placement) -> Option<u128> {
    let end = placement.start.checked_add(placement.size)?;
    if placement.size == 0 || end > 128 {
        return None;
    }
    let ones = if placement.size == 128 {
        u128::MAX
    } else {
        (1u128 << placement.size) - 1
    };
    Some(ones << placement.start)
}

/// Whether placements can hold together (none empty, none past slice 127).
pub fn representable(placement: Placement) -> bool {
    mask(placement).is_some()
}

/// Whether two placements share a slice.
pub fn overlaps(one: Placement, other: Placement) -> bool {
    match (mask(one), mask(other)) {
        (Some(one), Some(other)) => one & other != 0,
        // A placement the card cannot hold overlaps nothing it can; treated as in the way.
        _ => true,
    }
}

struct Search<'a> {
    demands: &'a [Demand],
    masks: Vec<Vec<u128>>,
    memo: HashMap<(usize, usize, u32, u128), Option<Score>>,
}

impl Search<'_> {
    /// The best score placing demand `d` from candidate `c` on, with `left` still to place in
    /// it, the slices `used` taken; `None` when nothing fits.
    fn best(&mut self, d: usize, c: usize, left: u32, used: u128) -> Option<Score> {
        let Some(demand) = self.demands.get(d) else {
            return Some((0, 0));
        };
        if left == 0 {
            let next = self.demands.get(d + 1).map_or(0, |next| next.count);
            return self.best(d + 1, 0, next, used);
        }
        let key = (d, c, left, used);
        if let Some(known) = self.memo.get(&key) {
            return *known;
        }
        let remaining = demand.candidates.len().saturating_sub(c);
        let answer = if usize::try_from(left).unwrap_or(usize::MAX) > remaining {
            None
        } else {
            let here = self.masks[d][c];
            let take = if here & used == 0 {
                self.best(d, c + 1, left - 1, used | here)
                    .map(|(kept, full)| match demand.candidates[c].existing {
                        Some((_, complete)) => (kept + 1, full + u32::from(complete)),
                        None => (kept, full),
                    })
            } else {
                None
            };
            let skip = self.best(d, c + 1, left, used);
            match (take, skip) {
                (Some(take), Some(skip)) if skip > take => Some(skip),
                (Some(take), _) => Some(take),
                (None, skip) => skip,
            }
        };
        self.memo.insert(key, answer);
        answer
    }
}

/// The chosen candidates (indices into each demand's) of the best fit, or `None` when the
/// demands cannot all be placed. Exhaustive: a fit is found whenever one exists.
pub fn fit(demands: &[Demand]) -> Option<(Vec<Vec<usize>>, Score)> {
    let masks: Option<Vec<Vec<u128>>> = demands
        .iter()
        .map(|demand| {
            demand
                .candidates
                .iter()
                .map(|candidate| mask(candidate.placement))
                .collect()
        })
        .collect();
    let mut search = Search {
        demands,
        masks: masks?,
        memo: HashMap::new(),
    };
    let first = demands.first().map_or(0, |demand| demand.count);
    let score = search.best(0, 0, first, 0)?;
    // Walk the same decisions again to name the chosen candidates.
    let mut chosen = vec![Vec::new(); demands.len()];
    let mut used = 0u128;
    for (d, demand) in demands.iter().enumerate() {
        let mut left = demand.count;
        let mut c = 0;
        while left > 0 {
            let here = *search.masks.get(d)?.get(c)?;
            let take = if here & used == 0 {
                search
                    .best(d, c + 1, left - 1, used | here)
                    .map(|(kept, full)| match demand.candidates[c].existing {
                        Some((_, complete)) => (kept + 1, full + u32::from(complete)),
                        None => (kept, full),
                    })
            } else {
                None
            };
            let skip = search.best(d, c + 1, left, used);
            let taking = match (take, skip) {
                (Some(take), Some(skip)) => take >= skip,
                (Some(_), None) => true,
                (None, _) => false,
            };
            if taking {
                chosen[d].push(c);
                used |= here;
                left -= 1;
            }
            c += 1;
        }
    }
    Some((chosen, score))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(start: u32, size: u32) -> Candidate {
        Candidate {
            placement: Placement::new(start, size),
            existing: None,
        }
    }

    #[test]
    fn a_greedy_first_choice_that_blocks_is_undone() {
        // 2g at 0..2 would leave no room for the 4g at 0; the search puts the 2g at 4 or 6.
        let demands = [
            Demand {
                count: 1,
                candidates: vec![at(0, 2), at(2, 2), at(4, 2), at(6, 2)],
            },
            Demand {
                count: 1,
                candidates: vec![at(0, 4)],
            },
        ];
        let (chosen, _) = fit(&demands).unwrap_or_default();
        assert_eq!(chosen, vec![vec![2], vec![0]]);
    }

    #[test]
    fn an_instance_already_placed_is_kept_over_an_empty_slot_earlier_on_the_card() {
        let mut kept = at(4, 1);
        kept.existing = Some((7, true));
        let demands = [Demand {
            count: 1,
            candidates: vec![at(0, 1), kept],
        }];
        assert_eq!(fit(&demands), Some((vec![vec![1]], (1, 1))));
    }

    #[test]
    fn more_than_the_slices_hold_does_not_fit() {
        let demands = [Demand {
            count: 3,
            candidates: vec![at(0, 4), at(4, 4)],
        }];
        assert_eq!(fit(&demands), None);
    }
}
