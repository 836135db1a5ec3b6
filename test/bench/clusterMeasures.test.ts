/**
 * The bench's hot-key-cluster figures (bench/metrics.ts, bench/roundTrips.ts, bench/targets.ts,
 * bench/libraries.ts): pure functions, checked on a CLUSTER INFO reply as Redis 7.0 writes it
 * and on hand-made result rows. The bench itself is run by `npm run bench`, not here.
 */
import { describe, expect, it } from 'vitest';
import { CLUSTER_LIBRARIES, entriesFor } from '../../bench/libraries.js';
import { clusterBusGrowth, parseClusterBusPubsub } from '../../bench/metrics.js';
import type { ResultRow } from '../../bench/results.js';
import { renderReport } from '../../bench/report.js';
import { carriesTag } from '../../bench/roundTrips.js';
import { evaluateTargets } from '../../bench/targets.js';
import { ROW_ENV } from './fixtures.js';

// A master of a 3-master cluster after one PUBLISH (relayed to the 2 other masters): counters at 0 are not listed.
const AFTER_ONE_PUBLISH = [
  'cluster_state:ok',
  'cluster_slots_assigned:16384',
  'cluster_known_nodes:3',
  'cluster_stats_messages_ping_sent:5',
  'cluster_stats_messages_pong_sent:4',
  'cluster_stats_messages_publish_sent:2',
  'cluster_stats_messages_sent:11',
  'cluster_stats_messages_publish_received:1',
  'cluster_stats_messages_received:9',
  '',
].join('\r\n');

describe('cluster-bus pub/sub counters', () => {
  it('reads publish and publishshard sent, a missing counter as 0', () => {
    expect(parseClusterBusPubsub(AFTER_ONE_PUBLISH)).toEqual({ publish: 2, publishShard: 0 });
    expect(parseClusterBusPubsub('cluster_state:ok\r\ncluster_stats_messages_publishshard_sent:7\r\ncluster_stats_messages_publish_received:3\r\n')).toEqual({
      publish: 0,
      publishShard: 7,
    });
  });

  it('is null for a reply that is not CLUSTER INFO', () => {
    expect(parseClusterBusPubsub('# Stats\r\ntotal_commands_processed:4\r\n')).toBeNull();
  });

  it('sums the growth over the nodes, node by node', () => {
    const before = [
      { publish: 2, publishShard: 0 },
      { publish: 0, publishShard: 1 },
    ];
    const after = [
      { publish: 12, publishShard: 0 },
      { publish: 4, publishShard: 3 },
    ];
    expect(clusterBusGrowth(before, after)).toEqual({ publish: 14, publishShard: 2 });
    expect(() => clusterBusGrowth(before, after.slice(1))).toThrow(/2 nodes before the run, 1 after/);
  });
});

describe('round trips of a Cluster client', () => {
  it("counts the Cluster's own connections named after the tag, and no other tag's", () => {
    expect(carriesTag('bench-1-w0', 'bench-1-w0')).toBe(true);
    expect(carriesTag('ioredis-cluster(ssubscriber):bench-1-w0', 'bench-1-w0')).toBe(true);
    expect(carriesTag('ioredis-cluster(subscriber):bench-1-w0', 'bench-1-w0')).toBe(true);
    expect(carriesTag('ioredis-cluster(subscriber):bench-11-w0', 'bench-1-w0')).toBe(false);
    expect(carriesTag('other(subscriber):bench-1-w0', 'bench-1-w0')).toBe(false);
    expect(carriesTag(null, 'bench-1-w0')).toBe(false);
    expect(carriesTag(undefined, 'bench-1-w0')).toBe(false);
  });
});

describe('hot-key-cluster runs', () => {
  it('runs rxjs-lock, its broadcast variant (a subscriber duplicate) and the peers, no references', () => {
    const entries = entriesFor('hot-key-cluster', undefined);
    expect(entries.map((e) => `${e.library}/${e.variant}`)).toEqual([
      'rxjs-lock/default',
      'rxjs-lock/broadcast',
      'redlock/default',
      'redis-semaphore/default',
      'baseline/default',
    ]);
    expect(entries[1]!.storeOptions).toEqual({ subscriber: 'duplicate' });
    expect(CLUSTER_LIBRARIES).not.toContain('store-only');
    // the variant stays out of the other scenarios
    expect(entriesFor('hot-key-1ms', undefined).some((e) => e.variant === 'broadcast')).toBe(false);
  });
});

/** A result row with only the figures these targets read. */
function row(scenario: string, variant: string, figures: Partial<ResultRow>): ResultRow {
  return {
    scenario,
    library: 'rxjs-lock',
    variant,
    label: variant === 'default' ? 'rxjs-lock' : `rxjs-lock (${variant})`,
    status: 'ok',
    note: null,
    env: ROW_ENV,
    busPublishMessages: null,
    busPublishShardMessages: null,
    busPubsubMessagesPerAcquisition: null,
    handoffs: null,
    sameLoopReacquirePct: null,
    ...figures,
  } as ResultRow;
}

describe('hot-key-cluster targets', () => {
  const judged = (rows: ResultRow[]) => evaluateTargets(rows).filter((t) => t.scenario === 'hot-key-cluster');
  const single = row('hot-key-1ms', 'default', { acquisitionsPerSec: 500 });

  it('passes at 0.8 × the one-server throughput and few bus messages, fewer than broadcast', () => {
    const rows = [
      single,
      row('hot-key-cluster', 'default', { acquisitionsPerSec: 400, busPublishMessages: 0, busPublishShardMessages: 3, busPubsubMessagesPerAcquisition: 0.006 }),
      row('hot-key-cluster', 'broadcast', {
        acquisitionsPerSec: 420,
        busPublishMessages: 900,
        busPublishShardMessages: 0,
        busPubsubMessagesPerAcquisition: 1.8,
      }),
    ];
    expect(judged(rows).map((t) => t.status)).toEqual(['PASS', 'PASS']);
    expect(judged(rows)[0]!.ratio).toBe(0.8);
  });

  it('misses below 0.8 ×, above 0.1 message per acquisition, or without the broadcast run to compare', () => {
    const slow = [
      single,
      row('hot-key-cluster', 'default', { acquisitionsPerSec: 399, busPubsubMessagesPerAcquisition: 0 }),
      row('hot-key-cluster', 'broadcast', { busPubsubMessagesPerAcquisition: 1.8 }),
    ];
    expect(judged(slow).map((t) => t.status)).toEqual(['MISS', 'PASS']);
    const chatty = [
      single,
      row('hot-key-cluster', 'default', { acquisitionsPerSec: 450, busPubsubMessagesPerAcquisition: 0.2 }),
      row('hot-key-cluster', 'broadcast', { busPubsubMessagesPerAcquisition: 1.8 }),
    ];
    expect(judged(chatty).map((t) => t.status)).toEqual(['PASS', 'MISS']);
    const alone = [single, row('hot-key-cluster', 'default', { acquisitionsPerSec: 450, busPubsubMessagesPerAcquisition: 0 })];
    expect(judged(alone)[1]).toMatchObject({ status: 'MISS', measured: expect.stringContaining('variant broadcast not run') });
  });

  it('misses when broadcast sends no more than sharded', () => {
    const even = [
      single,
      row('hot-key-cluster', 'default', { acquisitionsPerSec: 450, busPubsubMessagesPerAcquisition: 0 }),
      row('hot-key-cluster', 'broadcast', { busPubsubMessagesPerAcquisition: 0 }),
    ];
    expect(judged(even)[1]!.status).toBe('MISS');
  });

  it('shows the bus columns in the report', () => {
    const rows = [
      row('hot-key-cluster', 'default', {
        acquisitionsPerSec: 400,
        busPublishMessages: 0,
        busPublishShardMessages: 0,
        busPubsubMessagesPerAcquisition: 0,
        handoffs: 100,
      }),
      row('hot-key-cluster', 'broadcast', {
        acquisitionsPerSec: 420,
        busPublishMessages: 200,
        busPublishShardMessages: 0,
        busPubsubMessagesPerAcquisition: 0.476,
        handoffs: 100,
      }),
    ];
    const page = renderReport(rows);
    expect(page).toContain('### hot-key-cluster');
    expect(page).toMatch(/\| bus pub\/sub msgs\/acq \| bus pub\/sub msgs\/handoff \|/);
    expect(page).toMatch(/\*\*rxjs-lock \(broadcast\)\*\* \|.*\| 0\.476 \| 2\.00 \|/);
  });
});
