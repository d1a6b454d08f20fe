import fc from "fast-check";
import { IdSlots, IdValues } from "../../src/pipeline/ids";

/**
 * `IdSlots` / `IdValues` stand in for a `Map` by id in the rank and select stages: the same answers as the Map,
 * repeated ids (the last position wins) and ids no item has included.
 */
describe("IdSlots and IdValues read like a Map by id", () => {
  const ids = fc.array(fc.constantFrom("a", "b", "c", "m-1", "m-10", "m-2", "", "é", "Z"), { maxLength: 30 });

  test("slot(id) is the last position of id (−1 when absent), as Map.set in order keeps it", () => {
    fc.assert(
      fc.property(ids, fc.string({ maxLength: 4 }), (list, probe) => {
        const items = list.map((id) => ({ id }));
        const slots = new IdSlots(items);
        const last = new Map<string, number>();
        list.forEach((id, p) => {
          last.set(id, p);
        });
        for (const id of [...list, probe]) expect(slots.slot(id)).toBe(last.get(id) ?? -1);
        list.forEach((id, p) => {
          expect(slots.slotOf[p]).toBe(last.get(id));
        });
      }),
    );
  });

  test("values set by position read back by id as the last value a Map would hold", () => {
    fc.assert(
      fc.property(
        ids,
        fc.array(fc.tuple(fc.nat(), fc.double({ noNaN: true })), { maxLength: 40 }),
        (list, writes) => {
          const items = list.map((id) => ({ id }));
          const values = new IdValues(new IdSlots(items));
          const map = new Map<string, number>();
          for (const [at, v] of writes) {
            if (items.length === 0) break;
            const p = at % items.length;
            values.setAt(p, v);
            map.set((items[p] as { id: string }).id, v);
          }
          for (const id of [...list, "absent"]) expect(values.get(id)).toBe(map.get(id));
        },
      ),
    );
  });
});
