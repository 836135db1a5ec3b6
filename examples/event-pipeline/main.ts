/**
 * `npm run example:pipeline`: runs the event-pipeline example on a private redis-server and prints
 * what happened. Exits 1 if a balance is off or a message was applied twice or not at all.
 */
import { EmbeddedRedis } from '../../support/embeddedRedis.js';
import { runEventPipeline } from './pipeline.js';

const server = await EmbeddedRedis.start();
try {
  const report = await runEventPipeline({ host: server.host, port: server.port });
  console.log(JSON.stringify(report, null, 2));
  const exact = Object.keys(report.expected).every((account) => report.balances[account] === report.expected[account]);
  const once = report.applied === report.messages && report.distinctApplied === report.messages;
  console.log(exact && once ? 'OK: every balance exact, every message applied once' : 'FAILED');
  process.exitCode = exact && once ? 0 : 1;
} finally {
  await server.stop();
}
