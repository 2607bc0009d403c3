"""Neighbour tokens: what the networks see of each catalog workload for one cell of a new job.

A token describes neighbour n for cell (partner p, GPU type a) of query workload q: how q's
features differ from n's, whether they share a family, n's value for the cell, how well n
agrees with what has been observed of q so far (the fingerprint: nothing in P1 zero-shot), and
the cell itself (partner features, GPU type). Neighbours come in order of feature distance, the
sequence the RNN reads. Unknown neighbour values take the cell's catalog mean and are flagged.
"""
import numpy as np


def neighbour_order(x_query: np.ndarray, x_context: np.ndarray) -> np.ndarray:
    return np.argsort(np.linalg.norm(x_context - x_query, axis=1), kind="stable")


def _fill(values: np.ndarray, axis: int) -> tuple[np.ndarray, np.ndarray]:
    """NaN -> mean over `axis` (0.5 / 0 when all unknown); returns (filled, missing flag)."""
    missing = np.isnan(values)
    with np.errstate(all="ignore"):
        mean = np.nanmean(np.where(missing.all(axis=axis, keepdims=True), 0.0, values), axis=axis, keepdims=True)
    return np.where(missing, mean, values), missing.astype(float)


def rho_tokens(x_query, family_query, x_context, families, rho, observations):
    """Tokens for every cell (p, a) of the query's row, p over the context workloads.

    rho is the context's (K, K, G) matrix; observations are (p, a, rho of q with p,
    rho of p with q or NaN). Returns tokens (K*G, K+1, D), values (K*G, K+1), mask; the
    last token of each cell is the catalog mean of the cell, a fallback to attend to when
    no neighbour resembles the query.
    """
    k, _, g = rho.shape
    order = neighbour_order(x_query, x_context)
    x_n, fam_n = x_context[order], np.asarray(families)[order]
    rho_n = rho[order]  # (K neighbours, K partners, G)
    mask = np.broadcast_to(order[None, None, :] != np.arange(k)[:, None, None], (k, g, k))
    values, missing = _fill(np.transpose(rho_n, (1, 2, 0)), axis=2)  # (P, G, K)
    with np.errstate(all="ignore"):
        cell_mean = np.nan_to_num(np.nanmean(np.where(mask, np.transpose(rho_n, (1, 2, 0)), np.nan), axis=2), nan=0.5)
    rows = np.concatenate([rho_n, np.transpose(cell_mean, (0, 1))[None]], axis=0)  # (K+1, P, G)
    with np.errstate(all="ignore"):
        partner_rows = np.where(np.eye(k, dtype=bool)[:, :, None], np.nan, rho)  # rho of p next to others
        col_mean = np.nan_to_num(np.nanmean(partner_rows, axis=1), nan=0.5)
    cols = np.concatenate([rho[:, order], col_mean[:, None, :]], axis=1)  # (P, K+1, G)
    fp_mae, fp_bias = np.zeros(k + 1), np.zeros(k + 1)
    diffs = [[] for _ in range(k + 1)]
    for p, a, row_value, col_value in observations:
        for slot in range(k + 1):
            for d in (row_value - rows[slot, p, a], col_value - cols[p, slot, a]):
                if not np.isnan(d):
                    diffs[slot].append(d)
    for slot, d in enumerate(diffs):
        if d:
            fp_mae[slot], fp_bias[slot] = np.mean(np.abs(d)), np.mean(d)
    fp_count = np.full(k + 1, np.log1p(len(observations)))
    dx = np.vstack([x_query - x_n, np.zeros_like(x_query)])
    is_mean = np.zeros(k + 1)
    is_mean[-1] = 1.0
    same = np.append(fam_n == family_query, False)
    per_neighbour = np.concatenate(
        [dx, np.abs(dx), same[:, None], is_mean[:, None], fp_mae[:, None], fp_bias[:, None], fp_count[:, None]], axis=1
    )  # (K+1, Dn)
    values = np.concatenate([values, cell_mean[..., None]], axis=2)
    missing = np.concatenate([missing, np.zeros((k, g, 1))], axis=2)
    n_cells = k * g
    tokens = np.concatenate(
        [
            np.broadcast_to(per_neighbour, (k, g, k + 1, per_neighbour.shape[1])),
            values[..., None],
            missing[..., None],
            np.broadcast_to(x_context[:, None, None, :], (k, g, k + 1, x_context.shape[1])),
            np.broadcast_to(np.eye(g)[None, :, None, :], (k, g, k + 1, g)),
        ],
        axis=3,
    ).reshape(n_cells, k + 1, -1)
    mask = np.concatenate([mask, np.ones((k, g, 1), dtype=bool)], axis=2).reshape(n_cells, k + 1)
    return tokens.astype(np.float32), values.reshape(n_cells, k + 1).astype(np.float32), mask


def tau_tokens(x_query, family_query, batch_query, x_context, families, batches, log_tau, config_feats, observations):
    """Tokens for every configuration of the query; values are log steps/s.

    log_tau is the context's (K, C) log steps/s, NaN where unknown or not fitting. A neighbour
    of the same family is scaled by batch size (same samples/s); observations (config,
    steps/s) of the query shift each neighbour by its mean offset from them: its speed ratios
    applied to the query.
    """
    k, c = log_tau.shape
    order = neighbour_order(x_query, x_context)
    x_n, fam_n = x_context[order], np.asarray(families)[order]
    same = fam_n == family_query
    shift = np.where(same, np.log(np.asarray(batches, dtype=float)[order]) - np.log(batch_query), 0.0)
    s_n = log_tau[order] + shift[:, None]
    with np.errstate(all="ignore"):
        s_n = np.vstack([s_n, np.nan_to_num(np.nanmean(s_n, axis=0), nan=0.0)[None]])  # catalog-mean token
    x_n = np.vstack([x_n, x_query])
    same = np.append(same, False)
    is_mean = np.zeros(k + 1)
    is_mean[-1] = 1.0
    k += 1
    offsets = [[] for _ in range(k)]
    for config, steps in observations:
        if steps > 0:
            for slot in range(k):
                if not np.isnan(s_n[slot, config]):
                    offsets[slot].append(np.log(steps) - s_n[slot, config])
    off_mean = np.array([np.mean(o) if o else 0.0 for o in offsets])
    off_dev = np.array([np.std(o) if o else 0.0 for o in offsets])
    off_count = np.array([np.log1p(len(o)) for o in offsets])
    raw, missing = _fill(s_n.T, axis=1)  # (C, K)
    values = raw + off_mean[None, :]
    dx = x_query - x_n
    per_neighbour = np.concatenate(
        [dx, np.abs(dx), same[:, None], is_mean[:, None], off_mean[:, None], off_dev[:, None], off_count[:, None]],
        axis=1,
    )
    tokens = np.concatenate(
        [
            np.broadcast_to(per_neighbour, (c, k, per_neighbour.shape[1])),
            (raw - np.nanmean(raw))[..., None] / 3.0,
            missing[..., None],
            np.broadcast_to(config_feats[:, None, :], (c, k, config_feats.shape[1])),
        ],
        axis=2,
    )
    return tokens.astype(np.float32), values.astype(np.float32), np.ones((c, k), dtype=bool)
