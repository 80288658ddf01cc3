"""The kind spec's read helpers, as the JavaScript SDK's tests
(guests/js/sdk/index.test.js) and the Rust SDK's (spec.rs: `reads`,
`with_fields`) hold them."""

import unittest

import reconciler_sdk as sdk
from wit_world.exports import reconciler as r

POD = sdk.kind_ref("", "v1", "Pod")
SIGNATURE = "with_fields(read, fields)"


class Reads(unittest.TestCase):
    def test_a_read_names_no_fields_the_whole_object_unless_with_fields_names_them(self):
        self.assertEqual(sdk.reads(POD), r.ReadDecl(kind=POD, optional=False, cross_namespace=False, fields=None))
        self.assertIsNone(sdk.reads(POD, optional=True).fields)
        paths = ["status.phase", "spec.nodeName", "data.tls\\.crt"]
        read = sdk.with_fields(sdk.reads(POD), paths)
        self.assertEqual(
            read, r.ReadDecl(kind=POD, optional=False, cross_namespace=False, fields=["status.phase", "spec.nodeName", "data.tls\\.crt"])
        )
        # A copy: the caller's list changed later changes no declaration.
        paths.append("spec.containers")
        self.assertEqual(len(read.fields), 3)
        # The read's other fields are kept; a tuple is a list of paths too; none named is metadata only.
        optional = sdk.with_fields(sdk.reads(POD, optional=True), ("spec",))
        self.assertEqual((optional.optional, optional.fields), (True, ["spec"]))
        self.assertEqual(sdk.with_fields(sdk.reads(POD), []).fields, [])
        self.assertEqual(sdk.metadata_only(sdk.reads(POD)).fields, [])

    def test_with_fields_refuses_what_is_not_a_read_and_a_list_of_field_paths_naming_the_argument(self):
        read = sdk.reads(POD)
        with self.assertRaises(TypeError) as e:
            sdk.with_fields(read, "spec.replicas")
        self.assertEqual(
            str(e.exception),
            f"{SIGNATURE}: fields must be a list of non-empty str (field paths such as 'spec.replicas'), got str",
        )
        with self.assertRaisesRegex(TypeError, r"^with_fields\(read, fields\): fields must be a list of non-empty str .*, got NoneType$"):
            sdk.with_fields(read, None)
        with self.assertRaisesRegex(TypeError, r"^with_fields\(read, fields\): fields\[1\] must be a non-empty str .*, got int$"):
            sdk.with_fields(read, ["spec", 1])
        with self.assertRaises(ValueError) as e:
            sdk.with_fields(read, ["spec", ""])
        self.assertEqual(
            str(e.exception),
            f"{SIGNATURE}: fields[1] must be a non-empty str (a field path such as 'spec.replicas'), got ''",
        )
        with self.assertRaisesRegex(TypeError, r"^with_fields\(read, fields\): read must be a ReadDecl \(reads\(kind\)\), got KindRef$"):
            sdk.with_fields(POD, ["spec"])


if __name__ == "__main__":
    unittest.main()
