// TypeDoc plugin: every exported function, class, constant, interface and type alias of an entry
// point needs an `@example` in its TSDoc (on the declaration or on one of its signatures). A
// missing one is a warning, and the docs build treats warnings as errors.
import { Application, ReflectionKind } from 'typedoc';

const NEEDS_EXAMPLE = ReflectionKind.Function | ReflectionKind.Class | ReflectionKind.Variable | ReflectionKind.Interface | ReflectionKind.TypeAlias;

const hasExample = (comment) => comment?.blockTags.some((tag) => tag.tag === '@example') ?? false;

/** @param {Application} app */
export function load(app) {
  app.on(Application.EVENT_VALIDATE_PROJECT, (project) => {
    for (const reflection of project.getReflectionsByKind(NEEDS_EXAMPLE)) {
      if (!reflection.parent?.kindOf(ReflectionKind.Module)) continue; // top-level exports only
      const signatures = reflection.signatures ?? [];
      if (hasExample(reflection.comment) || signatures.some((s) => hasExample(s.comment))) continue;
      app.logger.warn(`${reflection.getFriendlyFullName()} (${ReflectionKind.singularString(reflection.kind)}) has no @example in its TSDoc`);
    }
  });
}
