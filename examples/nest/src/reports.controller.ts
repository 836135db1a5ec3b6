/** SSE: one build of a report at a time; the lock is held while the client listens. */
import { Controller, Param, Sse, type MessageEvent } from '@nestjs/common';
import { interval, map, take, type Observable } from 'rxjs';
import { WithLock } from 'rxjs-lock/nestjs';

@Controller('reports')
export class ReportsController {
  /**
   * Streams the build's progress. A second client for the same report gets 409 at once
   * (`waitTimeout: 0`) while the first listens; when it disconnects, the build stops and the lock
   * is released.
   */
  @Sse(':id/build')
  @WithLock('report:{params.id}', { waitTimeout: 0 })
  build(@Param('id') id: string): Observable<MessageEvent> {
    return interval(100).pipe(
      take(50),
      map((step) => ({ data: { report: id, progress: (step + 1) * 2 } })),
    );
  }
}
