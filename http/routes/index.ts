// The route table of the whole service. Each resource's file exports its entries.
import type { RouteDef } from '../route.ts';
import type { AppDeps } from '../deps.ts';
import { keyRoutes } from './keys.ts';
import { accountRoutes } from './account.ts';
import { systemRoutes } from './system.ts';

export function allRoutes(deps: AppDeps): RouteDef<any, any>[] {
  const routes: RouteDef<any, any>[] = [];
  routes.push(...keyRoutes(deps), ...accountRoutes(deps), ...systemRoutes(deps, () => routes));
  return routes;
}
