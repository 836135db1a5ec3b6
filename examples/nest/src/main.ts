/** Starts the example: REDIS_URL=redis://localhost:6379 PORT=3000 npx tsx examples/nest/src/main.ts */
import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { AppModule } from './app.module.js';

const app = await NestFactory.create(AppModule);
app.enableShutdownHooks(); // SIGTERM → LockModule closes the locker and its Redis connection
await app.listen(Number(process.env.PORT ?? 3000));
