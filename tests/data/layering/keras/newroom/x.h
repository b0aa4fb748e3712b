// Fixture: a folder of keras/ that the layering table does not list.
#pragma once
